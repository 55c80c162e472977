"""Source column types: from the vendor's type text to a logical type and a converter.

``sql_type(text, dialect=..., bytes_encoding=..., zone=...)`` reads a type such as
``decimal(10,4)``, ``bigint(20) unsigned``, ``VARCHAR2(20)`` or OMS's ``INT64``
and returns a cached ``SqlType``: the logical type, precision and scale, and a
``convert`` function that turns the vendor's JSON value (a string for Canal and
DRS, a number for OMS...) into a canonical value, raising ValueError when it
cannot. Conversion never guesses: a value that does not read as its type is an
error the parser turns into a reject. The errors are ``UnreadableValue``s that
describe the value (its kind and size) and never quote it: reasons must not
carry row values (``shared.parsing.errors``).

Dialects differ in what the same word means: OceanBase OMS uses ``BIGINT`` for
integers beyond int64 (its ``INT64`` is the signed 64-bit type), Oracle's
``DATE`` carries a time of day, and Huawei DRS writes MySQL's integer types
without their ``UNSIGNED`` (``bigint`` for both), so in the ``drs`` dialect an
integer word gets the type that holds both readings: ``int`` is int64 (signed
int and unsigned int both fit), ``bigint`` is DECIMAL(20,0).
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any, Final, Literal

import orjson

from binlake.shared.event.values import INT64_MAX, INT64_MIN, BigInt, Unparsed, Value
from binlake.shared.parsing import temporal
from binlake.shared.parsing.binary import DECODERS, BytesEncoding, from_int_list
from binlake.shared.parsing.errors import UnreadableValue, describe
from binlake.shared.parsing.jsondoc import exact_number

Dialect = Literal["mysql", "drs", "oms", "oracle"]
"""How to read type words: ``drs`` is MySQL as Huawei DRS names it, bare words that never say UNSIGNED."""
Converter = Callable[[Any], Value]

_MODIFIERS: Final = frozenset({"unsigned", "signed", "zerofill"})


@dataclass(slots=True, frozen=True)
class SqlType:
    text: str | None
    logical: str
    precision: int | None
    scale: int | None
    convert: Converter


# ------------------------------------------------------------------ converters


MAX_INTEGER_DIGITS: Final = 4300
"""Python's own limit for int <-> str conversion; longer integers are not SQL values."""


def _int(value: Any) -> int:
    if type(value) is str and len(value) < 19 and value.isdigit():
        return int(value)  # the common Canal case: plain digits, certainly within int64
    if type(value) is int:
        return value if INT64_MIN <= value <= INT64_MAX else BigInt(value)
    if isinstance(value, str):
        text = value.strip()
        if "_" in text:  # int() reads "1_000", SQL does not
            raise UnreadableValue(f"expected an integer, got {describe(value)}")
        try:
            number = int(text)  # accepts +/- and surrounding blanks
        except ValueError:  # int()'s own message quotes the text
            raise UnreadableValue(f"expected an integer, got {describe(value)}") from None
        return number if INT64_MIN <= number <= INT64_MAX else BigInt(number)
    if isinstance(value, bool):
        return int(value)  # JSON true/false for a TINYINT(1) column
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        exact_number(value)
    if (
        isinstance(value, Decimal)
        and value.is_finite()
        and value.adjusted() <= MAX_INTEGER_DIGITS  # int() of 1e4000000000 would run for ages
        and value == value.to_integral_value()
    ):
        number = int(value)
        return number if INT64_MIN <= number <= INT64_MAX else BigInt(number)
    raise UnreadableValue(f"expected an integer, got {describe(value)}")


def _decimal(value: Any) -> Decimal:
    if isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            raise UnreadableValue(f"expected a decimal number, got {describe(value)}") from None
    elif isinstance(value, Decimal):
        number = value
    elif isinstance(value, bool):
        raise UnreadableValue("expected a decimal number, got a boolean")
    elif isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        return exact_number(value)
    else:
        raise UnreadableValue(f"expected a decimal number, got {describe(value)}")
    if not number.is_finite():
        raise UnreadableValue("a SQL decimal cannot be NaN or infinite")
    return number


def _float(value: Any) -> float:
    if isinstance(value, float):
        return value
    if isinstance(value, str):
        try:
            return float(value.strip())
        except ValueError:  # float()'s own message quotes the text
            raise UnreadableValue(f"expected a floating-point number, got {describe(value)}") from None
    if isinstance(value, int | Decimal) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            raise UnreadableValue(f"a floating-point number cannot hold {describe(value)}") from None
    raise UnreadableValue(f"expected a floating-point number, got {describe(value)}")


def text(value: Any) -> str:
    """The converter of text columns (string, enum, set, interval)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        exact_number(value)
    raise UnreadableValue(f"expected a string, got {describe(value)}")


def _json_text(value: Any) -> str:
    """A JSON column: text as given, or a nested JSON value rendered compactly, digits exact."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return orjson.dumps(_exact_json(value)).decode()
    return text(value)


def _exact_json(value: Any) -> Any:
    """A nested JSON value orjson renders without losing digits.

    A float here came from the fast decoder (its digits may already be lost), so
    it asks for the exact decode; after it, numbers are Decimal or int, which are
    spliced in as their own digits (orjson refuses ints beyond 64 bits).
    """
    if isinstance(value, dict):
        return {key: _exact_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_exact_json(item) for item in value]
    if isinstance(value, float):
        return exact_number(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise UnreadableValue("a JSON value cannot hold NaN or an infinite number")
        return orjson.Fragment(str(value))
    if isinstance(value, int) and not isinstance(value, bool) and not INT64_MIN <= value <= 2**64 - 1:
        return orjson.Fragment(int.__repr__(value))
    return value


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("1", "true"):
            return True
        if text in ("0", "false"):
            return False
    raise UnreadableValue(f"expected a boolean (true/false/1/0), got {describe(value)}")


BIT_MAX: Final = 2**64 - 1
"""The largest value of MySQL's widest BIT, BIT(64)."""


def bit_value(number: int) -> int:
    """A BIT value; a wider or negative one is no MySQL BIT (and no JSON view could write it)."""
    if not 0 <= number <= BIT_MAX:
        raise UnreadableValue(f"expected a BIT value of at most 64 bits, got {describe(number)}")
    return number


def _bit(value: Any) -> int:
    """MySQL BIT(n) as the unsigned integer of its bits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return bit_value(value)
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return bit_value(int(text))
    raise UnreadableValue(f"expected a BIT value as an integer, got {describe(value)}")


def _bytes_converter(encoding: BytesEncoding) -> Converter:
    decode = DECODERS[encoding]

    def convert(value: Any) -> bytes:
        if isinstance(value, str):
            return decode(value)
        if isinstance(value, list):
            return from_int_list(value)
        raise UnreadableValue(f"expected binary as {encoding} text, got {describe(value)}")

    return convert


def _bit_bytes_converter(encoding: BytesEncoding) -> Converter:
    as_bytes = _bytes_converter(encoding)

    def convert(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            return bit_value(value)
        if encoding == "latin1" and isinstance(value, str) and value.strip().isdigit():
            return bit_value(int(value))  # Canal renders BIT as its number
        raw = as_bytes(value)
        assert isinstance(raw, bytes)
        return bit_value(int.from_bytes(raw, "big"))

    return convert


def _date(value: Any) -> _dt.date | Unparsed:
    if isinstance(value, str):
        return temporal.parse_date(value)
    raise UnreadableValue(f"expected a date YYYY-MM-DD, got {describe(value)}")


def _oracle_date(value: Any) -> _dt.datetime | Unparsed:
    if isinstance(value, str):
        text = value.strip()
        return temporal.parse_local_datetime(text if len(text) > 10 else text + " 00:00:00")
    raise UnreadableValue(f"expected a date-time, got {describe(value)}")


def _time(value: Any) -> Value:
    if isinstance(value, str):
        return temporal.parse_time(value)
    raise UnreadableValue(f"expected a time HH:MM:SS, got {describe(value)}")


def _local_datetime(value: Any) -> _dt.datetime | Unparsed:
    if isinstance(value, str):
        return temporal.parse_local_datetime(value)
    raise UnreadableValue(f"expected a date-time YYYY-MM-DD HH:MM:SS, got {describe(value)}")


def _instant_converter(zone: _dt.tzinfo) -> Converter:
    def convert(value: Any) -> _dt.datetime | Unparsed:
        if isinstance(value, str):
            return temporal.parse_instant(value, zone)
        if isinstance(value, int | Decimal) and not isinstance(value, bool):
            return temporal.instant_from_epoch_text(str(value))
        if isinstance(value, float):
            exact_number(value)
        raise UnreadableValue(f"expected a timestamp, got {describe(value)}")

    return convert


def _year(value: Any) -> int:
    number = _int(value)
    if not 0 <= number <= 9999:
        raise UnreadableValue(f"expected a year 0..9999, got {describe(number)}")
    return number


def _geometry(value: Any) -> Value:
    # Text renderings (WKT/EWKT, as OMS passes them) stay text; binary stays bytes.
    if isinstance(value, str | bytes):
        return value
    raise UnreadableValue(f"expected a geometry as text, got {describe(value)}")


# The converters the native fast lane reproduces, by public name (shared/kernel/plan.py
# maps them to the lane's kinds; its differential tests hold the two to the same values).
convert_int: Final = _int
convert_year: Final = _year
convert_decimal: Final = _decimal
convert_float: Final = _float
convert_json_text: Final = _json_text
convert_boolean: Final = _boolean
convert_date: Final = _date
convert_time: Final = _time
convert_local_datetime: Final = _local_datetime


def infer(value: Any) -> Value:
    """Convert a JSON value of an untyped column (see ``inferred_logical``)."""
    if isinstance(value, str | bool):
        return value
    if isinstance(value, int):
        return value if INT64_MIN <= value <= INT64_MAX else BigInt(value)
    if isinstance(value, float):
        return exact_number(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise UnreadableValue("a SQL value cannot be NaN or infinite")
        return value
    if isinstance(value, dict | list):
        return _json_text(value)
    raise UnreadableValue(f"unsupported JSON value: {describe(value)}")


def inferred_logical(value: Value) -> str:
    """The logical type an untyped column gets from its (converted) value."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, BigInt):
        return "integer"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, Decimal):
        return "decimal"
    return "string"


# -------------------------------------------------------------- type reading

_INT_WIDTH: Final = {
    "tinyint": ("int8", "int16"),
    "smallint": ("int16", "int32"),
    "mediumint": ("int32", "int32"),
    "int": ("int32", "int64"),
    "integer": ("int32", "int64"),
    "bigint": ("int64", "uint64"),
    "int64": ("int64", "uint64"),
    "int8": ("int8", "int16"),
    "int16": ("int16", "int32"),
    "int32": ("int32", "int64"),
    "long": ("int64", "uint64"),
}
_STRINGS: Final = frozenset(
    {
        "char", "varchar", "tinytext", "text", "mediumtext", "longtext", "string", "var_string",
        "character", "character varying", "nchar", "nvarchar", "national char", "national varchar",
        "varchar2", "nvarchar2", "clob", "nclob", "long varchar", "rowid", "urowid", "xmltype",
        "longvarchar", "longnvarchar", "uuid",
    }
)  # fmt: skip
_BINARIES: Final = frozenset(
    {
        "binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob", "bytes", "raw",
        "long raw", "bfile", "longvarbinary", "bytea",
    }
)  # fmt: skip
_GEOMETRIES: Final = frozenset(
    {"geometry", "point", "linestring", "polygon", "multipoint", "multilinestring", "multipolygon",
     "geometrycollection", "geomcollection"}
)  # fmt: skip

# java.sql.Types codes, as Canal and DRS send them in ``sqlType``.
JDBC_TYPES: Final[dict[int, str]] = {
    -7: "bit", -6: "tinyint", 5: "smallint", 4: "int", -5: "bigint", 6: "float", 7: "float",
    8: "double", 2: "decimal", 3: "decimal", 1: "char", 12: "varchar", -1: "text", -15: "nchar",
    -9: "nvarchar", -16: "text", 91: "date", 92: "time", 93: "datetime", -2: "binary",
    -3: "varbinary", -4: "blob", 2004: "blob", 2005: "text", 2011: "text", 16: "boolean",
    2013: "time", 2014: "timestamp",
}  # fmt: skip


def _params(raw: str | None) -> list[int]:
    if not raw:
        return []
    out = []
    for part in raw.split(","):
        part = part.strip()
        if part.isdigit():
            out.append(int(part))
    return out


def _logical(
    base: str, params: list[int], unsigned: bool, rest: str, dialect: Dialect
) -> tuple[str, int | None, int | None]:
    """(logical type, precision, scale) for a parsed type name."""
    if base in ("bool", "boolean"):
        return "boolean", None, None
    if base == "bigint" and dialect == "oms":
        return "integer", None, None  # OMS BIGINT: "integers beyond 64 bits"
    if base in _INT_WIDTH:
        signed, wide = _INT_WIDTH[base]
        if dialect == "drs" and not unsigned:
            # Signedness unstated: 18446744073709551615 is as likely as -1. A type that
            # holds both readings (an int64 column would lose every unsigned value past 2**63-1).
            return ("decimal", 20, 0) if wide == "uint64" else (wide, None, None)
        return (wide if unsigned else signed), None, None
    if base in ("decimal", "numeric", "dec", "fixed", "number", "bigdecimal"):
        # DECIMAL(p) and Oracle NUMBER(p) both mean scale 0; bare NUMBER is unconstrained.
        precision = params[0] if params else None
        scale = params[1] if len(params) > 1 else (0 if params else None)
        return "decimal", precision, scale
    if base == "float":
        if dialect == "oracle":
            return "decimal", None, None  # Oracle FLOAT(b) is a binary-precision NUMBER
        return ("float64" if params and params[0] > 24 else "float32"), None, None
    if base in ("double", "double precision", "real", "binary_double", "float64"):
        return "float64", None, None
    if base in ("binary_float", "float32"):
        return "float32", None, None
    if base == "json":
        return "json", None, None
    if base == "enum":
        return "enum", None, None
    if base == "set":
        return "set", None, None
    if base in _STRINGS:
        return "string", None, None
    if base.startswith("interval"):
        return "interval", None, None
    if base in _BINARIES:
        return "bytes", None, None
    if base == "bit":
        return "bit", (params[0] if params else 1), None
    if base == "date":
        return ("datetime" if dialect == "oracle" else "date"), None, None
    if base in ("time", "localtime"):
        return "time", (params[0] if params else None), None
    if base in ("datetime", "localdatetime", "datetime2", "smalldatetime"):
        return "datetime", (params[0] if params else None), None
    if base == "timestamp":
        tail = rest.lower()
        if dialect == "oracle":
            return ("timestamp" if "time zone" in tail else "datetime"), (params[0] if params else None), None
        return "timestamp", (params[0] if params else None), None
    if base in ("zoned_datetime", "timestamptz", "timestamp_with_timezone", "timestamp with time zone"):
        return "timestamp", None, None
    if base == "year":
        return "year", None, None
    if base in _GEOMETRIES:
        return "geometry", None, None
    return "unknown", None, None


def _converter(logical: str, base: str, dialect: Dialect, bytes_encoding: BytesEncoding, zone: _dt.tzinfo) -> Converter:
    if logical in ("int8", "int16", "int32", "int64", "uint64", "integer") or base in _INT_WIDTH:
        return _int  # also DRS's bigint, typed DECIMAL(20,0): its values are integers, never "1.5"
    if logical == "decimal":
        return _decimal
    if logical in ("float32", "float64"):
        return _float
    if logical == "boolean":
        return _boolean
    if logical in ("string", "enum", "set", "interval"):
        return text
    if logical == "json":
        return _json_text
    if logical == "bytes":
        return _bytes_converter(bytes_encoding)
    if logical == "bit":
        return _bit_bytes_converter(bytes_encoding)
    if logical == "date":
        return _date
    if logical == "time":
        return _time
    if logical == "datetime":
        return _oracle_date if (dialect == "oracle" and base == "date") else _local_datetime
    if logical == "timestamp":
        return _instant_converter(zone)
    if logical == "year":
        return _year
    if logical == "geometry":
        return _geometry
    return infer


@functools.lru_cache(maxsize=4096)
def sql_type(
    text: str | None,
    dialect: Dialect = "mysql",
    bytes_encoding: BytesEncoding = "latin1",
    zone: _dt.tzinfo = temporal.UTC,
) -> SqlType:
    """The logical type and converter for a vendor's column type text (cached)."""
    if text is None:
        return SqlType(None, "unknown", None, None, infer)
    lowered = text.strip().lower()
    head, paren, tail = lowered.partition("(")
    inside, _, rest = tail.partition(")") if paren else ("", "", "")
    words = head.split()
    rest_words = rest.split()
    # ZEROFILL implies UNSIGNED in MySQL.
    unsigned = any(word in ("unsigned", "zerofill") for word in words + rest_words)
    base = " ".join(word for word in words if word not in _MODIFIERS)
    if base.startswith("timestamp") and "time zone" in lowered:
        rest = "with time zone"
        base = "timestamp"
    params = _params(inside)
    logical, precision, scale = _logical(base, params, unsigned, rest, dialect)
    return SqlType(text, logical, precision, scale, _converter(logical, base, dialect, bytes_encoding, zone))


def jdbc_type_name(code: int) -> str | None:
    """A type name for a java.sql.Types code, for messages without type text."""
    return JDBC_TYPES.get(code)
