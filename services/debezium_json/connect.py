"""Kafka Connect field schemas, as JsonConverter writes them, to typed columns.

With ``schemas.enable=true`` every Debezium message carries the Connect schema of
its row struct: a literal type per column (``int32``, ``string``, ``bytes``...)
and, for many columns, a semantic ``name`` saying what the literal value means
(``io.debezium.time.Date`` is days since the epoch, ``...Decimal`` is base64
two's-complement unscaled bytes with a ``scale`` parameter...). This module
turns one struct schema into a ``RowTypes`` whose converters read the literal
JSON values back into canonical values. ``source_type`` is the semantic name
when there is one, else the literal type.

Debezium's time types follow its MySQL documentation: ``Timestamp``,
``MicroTimestamp``, ``NanoTimestamp`` and, in ``time.precision.mode=connect``,
``org.apache.kafka.connect.data.Timestamp`` encode a DATETIME's wall clock as if
it were UTC, so they become local date-times (no zone); only
``ZonedTimestamp`` (MySQL TIMESTAMP) is an instant.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final

import orjson

from binlake.shared.event.values import INT64_MAX, INT64_MIN, SqlTime, Value
from binlake.shared.parsing import temporal
from binlake.shared.parsing.binary import DECODERS, BytesEncoding
from binlake.shared.parsing.errors import BAD_FIELD, RejectError, UnreadableValue, describe
from binlake.shared.parsing.rows import RowTypes
from binlake.shared.parsing.sqltypes import BIT_MAX, Converter, SqlType, bit_value, conversion, infer, sql_type

_INT: Final[Converter] = conversion("int")
"""Any integer: the Connect types below bound it (a MicroTime's range, an INT16's width...)."""
_DECIMAL: Final[Converter] = sql_type("decimal").convert
FLOAT: Final[Converter] = sql_type("double").convert
_BOOLEAN: Final[Converter] = sql_type("boolean").convert
_TEXT: Final[Converter] = sql_type("varchar").convert
_JSON: Final[Converter] = sql_type("json").convert

_INTS: Final = frozenset({"int8", "int16", "int32", "int64"})
_FLOATS: Final = {"float32": "float32", "float64": "float64", "float": "float64", "double": "float64"}

DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL: Final = "io.debezium.data.VariableScaleDecimal"
_DATES: Final = frozenset({"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"})
_TIMES: Final = {
    "io.debezium.time.Time": 1_000,  # unit in microseconds
    "org.apache.kafka.connect.data.Time": 1_000,
    "io.debezium.time.MicroTime": 1,
    "io.debezium.time.NanoTime": None,  # nanoseconds: divided, not multiplied
}
_LOCAL_TIMESTAMPS: Final = {
    "io.debezium.time.Timestamp": 1_000,
    "org.apache.kafka.connect.data.Timestamp": 1_000,
    "io.debezium.time.MicroTimestamp": 1,
    "io.debezium.time.NanoTimestamp": None,
}
_GEOMETRIES: Final = frozenset(
    {"io.debezium.data.geometry.Geometry", "io.debezium.data.geometry.Point", "io.debezium.data.geometry.Geography"}
)
_STRINGS: Final = {
    "io.debezium.data.Json": ("json", _JSON),
    "io.debezium.data.Enum": ("enum", _TEXT),
    "io.debezium.data.EnumSet": ("set", _TEXT),
    "io.debezium.data.Uuid": ("string", _TEXT),
    "io.debezium.data.Xml": ("string", _TEXT),
}

_CACHE: dict[tuple[Any, ...], RowTypes] = {}
_CACHE_LIMIT: Final = 1024


# ------------------------------------------------------------------ converters


def _whole(value: Any) -> int:
    number = _INT(value)
    assert isinstance(number, int)
    return number


def _bytes_of(encoding: BytesEncoding) -> Callable[[Any], bytes]:
    decode = DECODERS[encoding]

    def convert(value: Any) -> bytes:
        if isinstance(value, str):
            return decode(value)
        raise UnreadableValue(f"expected binary as {encoding} text, got {describe(value)}")

    return convert


def _scaled(unscaled: int, scale: int) -> Decimal:
    """``unscaled * 10**-scale`` exactly (no context rounding, trailing zeros kept)."""
    # The string constructor is exact and runs in C: "1500E-2" is Decimal("15.00").
    return Decimal(f"{unscaled}E{-scale}")


def _connect_decimal(scale: int, encoding: BytesEncoding) -> Converter:
    as_bytes = _bytes_of(encoding)

    def convert(value: Any) -> Value:
        if isinstance(value, str):
            raw = as_bytes(value)
            if not raw:
                raise UnreadableValue("empty decimal bytes")
            return _scaled(int.from_bytes(raw, "big", signed=True), scale)
        return _DECIMAL(value)  # JsonConverter decimal.format=NUMERIC writes a JSON number

    return convert


def _variable_scale_decimal(encoding: BytesEncoding) -> Converter:
    as_bytes = _bytes_of(encoding)

    def convert(value: Any) -> Decimal:
        if not isinstance(value, dict) or "scale" not in value or "value" not in value:
            raise UnreadableValue(f"expected a struct {{scale, value}}, got {describe(value)}")
        raw = as_bytes(value["value"])
        if not raw:
            raise UnreadableValue("empty decimal bytes")
        return _scaled(int.from_bytes(raw, "big", signed=True), _whole(value["scale"]))

    return convert


def _date(value: Any) -> _dt.date:
    return temporal.date_from_days(_whole(value))


def _micros(value: Any, unit: int | None) -> int:
    number = _whole(value)
    if unit is not None:
        return number * unit
    whole = abs(number) // 1_000  # nanoseconds: truncated to microseconds, toward zero
    return -whole if number < 0 else whole


def _time(unit: int | None) -> Converter:
    def convert(value: Any) -> Value:
        micros = _micros(value, unit)
        if not INT64_MIN <= micros <= INT64_MAX:  # the canonical TIME is a long of microseconds
            raise UnreadableValue(f"expected a time within the 64-bit range of microseconds, got {describe(value)}")
        return SqlTime(micros)

    return convert


def _local_timestamp(unit: int | None) -> Converter:
    return lambda value: temporal.local_from_epoch_micros(_micros(value, unit))


def _zoned_timestamp(value: Any) -> Value:
    if not isinstance(value, str):
        raise UnreadableValue(f"expected an ISO 8601 timestamp string, got {describe(value)}")
    return temporal.parse_instant(value, temporal.UTC)


def _year(value: Any) -> int:
    number = _whole(value)
    if not 0 <= number <= 9999:
        raise UnreadableValue(f"expected a year 0..9999, got {describe(number)}")
    return number


def _bits(encoding: BytesEncoding) -> Converter:
    as_bytes = _bytes_of(encoding)

    def convert(value: Any) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            # A JSON integer as it is, negative too (any int64 alike); only one
            # beyond 64 bits is refused, which no JSON view or Avro long could carry.
            if not INT64_MIN <= value <= BIT_MAX:
                raise UnreadableValue(f"expected a BIT value of at most 64 bits, got {describe(value)}")
            return value
        return bit_value(int.from_bytes(as_bytes(value), "little"))  # Debezium: BIT(n>1) bytes are little-endian

    return convert


def _geometry(encoding: BytesEncoding) -> Converter:
    as_bytes = _bytes_of(encoding)

    def convert(value: Any) -> bytes:
        if not isinstance(value, dict) or not isinstance(value.get("wkb"), str):
            raise UnreadableValue(f"expected a geometry struct {{wkb, srid}}, got {describe(value)}")
        return as_bytes(value["wkb"])

    return convert


# ------------------------------------------------------------------ schemas


def _param_int(params: dict[str, Any], key: str, column: str) -> int | None:
    value = params.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().removeprefix("-").isdecimal():  # isdecimal: what int() reads
        return int(value)
    raise RejectError(BAD_FIELD, f"schema of column {column!r}: parameter {key!r} must be an integer")


def field_type(schema: dict[str, Any], encoding: BytesEncoding) -> SqlType:
    """The logical type and converter of one Connect field schema."""
    column = schema.get("field")
    literal = schema.get("type")
    name = schema.get("name")
    if not isinstance(literal, str) or not (name is None or isinstance(name, str)):
        raise RejectError(BAD_FIELD, f"schema of column {column!r} needs a string 'type' (and optional 'name')")
    literal = literal.lower()
    params = schema.get("parameters")
    if not isinstance(params, dict):
        params = {}
    text = name or literal
    if name == DECIMAL:
        scale = _param_int(params, "scale", str(column))
        if scale is None:
            raise RejectError(BAD_FIELD, f"schema of decimal column {column!r} has no 'scale' parameter")
        precision = _param_int(params, "connect.decimal.precision", str(column))
        return SqlType(text, "decimal", precision, scale, _connect_decimal(scale, encoding))
    if name == VARIABLE_SCALE_DECIMAL:
        return SqlType(text, "decimal", None, None, _variable_scale_decimal(encoding))
    if name in _DATES:
        return SqlType(text, "date", None, None, _date)
    if name in _TIMES:
        return SqlType(text, "time", None, None, _time(_TIMES[name]))
    if name in _LOCAL_TIMESTAMPS:
        return SqlType(text, "datetime", None, None, _local_timestamp(_LOCAL_TIMESTAMPS[name]))
    if name == "io.debezium.time.ZonedTimestamp":
        return SqlType(text, "timestamp", None, None, _zoned_timestamp)
    if name == "io.debezium.time.Year":
        return SqlType(text, "year", None, None, _year)
    if name == "io.debezium.data.Bits":
        return SqlType(text, "bit", _param_int(params, "length", str(column)), None, _bits(encoding))
    if name in _GEOMETRIES:
        return SqlType(text, "geometry", None, None, _geometry(encoding))
    if name in _STRINGS and literal == "string":
        logical, convert = _STRINGS[name]
        return SqlType(text, logical, None, None, convert)
    # No semantic name we know: the literal type decides.
    if literal in _INTS:
        return SqlType(text, literal, None, None, conversion(literal))  # the kernel's int8..int64 widths
    if literal in _FLOATS:
        return SqlType(text, _FLOATS[literal], None, None, FLOAT)
    if literal == "boolean":
        return SqlType(text, "boolean", None, None, _BOOLEAN)
    if literal == "string":
        return SqlType(text, "string", None, None, _TEXT)
    if literal == "bytes":
        return SqlType(text, "bytes", None, None, _bytes_of(encoding))
    return SqlType(text, "unknown", None, None, infer)  # struct / map / array: rendered as JSON text


def _field_key(schema: Any) -> tuple[Any, ...]:
    if not isinstance(schema, dict):
        raise RejectError(BAD_FIELD, "every entry of a schema's 'fields' must be an object")
    params = schema.get("parameters")
    items: tuple[Any, ...] = ()
    if isinstance(params, dict):
        items = tuple(sorted((str(k), v if isinstance(v, str | int) else repr(v)) for k, v in params.items()))
    return (schema.get("field"), schema.get("type"), schema.get("name"), items)


def struct_fields(schema: Any, what: str) -> list[dict[str, Any]]:
    """The ``fields`` of a struct schema, checked."""
    if not isinstance(schema, dict):
        raise RejectError(BAD_FIELD, f"{what} must be a JSON object")
    fields = schema.get("fields")
    if not isinstance(fields, list):
        raise RejectError(BAD_FIELD, f"{what} must have a 'fields' array")
    for item in fields:
        if not isinstance(item, dict) or not isinstance(item.get("field"), str):
            raise RejectError(BAD_FIELD, f"every entry of {what}.fields must be an object with a string 'field'")
    return fields


def row_types(
    fields: list[dict[str, Any]], encoding: BytesEncoding, keep: Callable[[str], bool] = lambda _: True
) -> RowTypes:
    """A cached ``RowTypes`` for the row struct with these field schemas (only names ``keep`` accepts)."""
    try:
        # Fast key: the schema's own JSON bytes (every message repeats the same schema).
        key: tuple[Any, ...] = (encoding, keep, orjson.dumps(fields))
    except TypeError:  # exact-decoded numbers (Decimal) in the schema: the structural key
        key = ()
    try:
        if not key:
            key = (encoding, keep, *(_field_key(f) for f in fields))
        cached = _CACHE.get(key)
    except TypeError:  # an unhashable 'type', 'name' or 'field'
        raise RejectError(BAD_FIELD, "schema field 'type', 'name' and 'field' must be strings") from None
    if cached is not None:
        return cached
    types = RowTypes((f["field"], field_type(f, encoding)) for f in fields if keep(f["field"]))
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = types
    return types
