"""Canonical column descriptors -> Spark types, type widening, and value conversion.

An image value is the struct the sink's decoder yields for the value union
(``events.decoder``: ``member_long``, ``member_Decimal.digits``...). The union branch
says the value's kind, so a conversion reads the branches that can hold the
target type and leaves the rest NULL: an ``Unparsed`` value (MySQL zero date)
is NULL in every typed column, its text stays in the changelog.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

MAX_PRECISION: Final = 38
_INTEGRAL_ORDER: Final = (ByteType(), ShortType(), IntegerType(), LongType())
_INTEGRAL_DIGITS: Final = {"tinyint": 3, "smallint": 5, "int": 10, "bigint": 20}
_FIXED: Final[dict[str, DataType]] = {
    "boolean": BooleanType(),
    "int8": ByteType(),
    "int16": ShortType(),
    "int32": IntegerType(),
    "int64": LongType(),
    "uint64": DecimalType(20, 0),
    "integer": DecimalType(38, 0),
    "float32": FloatType(),
    "float64": DoubleType(),
    "string": StringType(),
    "json": StringType(),
    "enum": StringType(),
    "set": StringType(),
    "interval": StringType(),
    "geometry": StringType(),
    "bytes": BinaryType(),
    "bit": LongType(),
    "date": DateType(),
    "time": LongType(),
    "datetime": TimestampNTZType(),
    "timestamp": TimestampType(),
    "year": IntegerType(),
}
_NTZ_EPOCH: Final = "TIMESTAMP_NTZ'1970-01-01 00:00:00'"


def spark_type(logical_type: str, precision: int | None, scale: int | None) -> DataType | None:
    """The mirror column type of a descriptor; None for ``unknown`` (no type known yet)."""
    if logical_type == "decimal":
        if precision is None or not 0 < precision <= MAX_PRECISION:
            return StringType()
        s = scale or 0
        if not 0 <= s <= precision:
            return StringType()
        return DecimalType(precision, s)
    if logical_type == "unknown":
        return None
    return _FIXED.get(logical_type, StringType())


def type_suffix(data_type: DataType) -> str:
    """A column-name-safe type name: ``bigint``, ``decimal_20_0``, ``timestamp_ntz``."""
    if isinstance(data_type, DecimalType):
        return f"decimal_{data_type.precision}_{data_type.scale}"
    return data_type.simpleString()


def _as_decimal(data_type: DataType) -> DecimalType | None:
    if isinstance(data_type, DecimalType):
        return data_type
    digits = _INTEGRAL_DIGITS.get(data_type.simpleString())
    return None if digits is None else DecimalType(digits, 0)


def widen(existing: DataType, incoming: DataType) -> DataType | None:
    """The narrowest type holding every value of both, among the widenings binlake supports; else None."""
    if existing == incoming:
        return existing
    if existing in _INTEGRAL_ORDER and incoming in _INTEGRAL_ORDER:
        return max(existing, incoming, key=_INTEGRAL_ORDER.index)
    if {type(existing), type(incoming)} == {FloatType, DoubleType}:
        return DoubleType()
    left, right = _as_decimal(existing), _as_decimal(incoming)
    if left is not None and right is not None:
        scale = max(left.scale, right.scale)
        precision = max(left.precision - left.scale, right.precision - right.scale) + scale
        return DecimalType(precision, scale) if precision <= MAX_PRECISION else None
    return None


def fits(incoming: DataType, existing: DataType) -> bool:
    """True when every ``incoming`` value casts to ``existing`` without loss."""
    return widen(existing, incoming) == existing


def sql_string(text: str) -> str:
    """``text`` as a Spark SQL string literal.

    A text with a quote or a backslash goes as UTF-8 hex bytes cast to string: how a quoted
    literal unescapes depends on ``spark.sql.parser.escapedStringLiterals``, hex does not.
    """
    if "'" in text or "\\" in text:
        return f"CAST(X'{text.encode().hex()}' AS STRING)"
    return f"'{text}'"


def convert(value: str, target: DataType) -> str:
    """The typed value of one image value struct (NULL when no branch holds the target type), as SQL text.

    ``value`` is an SQL expression of the struct (``_image['qty']``). SQL text, not Columns: a
    mirror projection converts every column of every descriptor, and one ``selectExpr`` of texts
    is a single Py4J call where Column building took thousands (each PySpark function call asks
    the JVM for the active session and the function), a large share of a mirror batch's time.
    """
    v = value
    t = target.simpleString()
    if isinstance(target, BooleanType):
        out = f"coalesce({v}.member_boolean, {v}.member_long != 0)"
    elif target in _INTEGRAL_ORDER or isinstance(target, DecimalType):
        out = (
            f"coalesce(try_cast({v}.member_long AS {t}), try_cast({v}.member_BigInteger.digits AS {t}),"
            f" try_cast({v}.member_Decimal.digits AS {t}), try_cast(CAST({v}.member_boolean AS int) AS {t}),"
            f" try_cast({v}.member_Time.micros AS {t}))"  # time -> long micros
        )
    elif isinstance(target, FloatType | DoubleType):
        out = (
            f"coalesce(CAST({v}.member_double AS {t}), CAST({v}.member_long AS {t}),"
            f" try_cast({v}.member_BigInteger.digits AS {t}), try_cast({v}.member_Decimal.digits AS {t}))"
        )
    elif isinstance(target, StringType):
        out = (
            f"coalesce({v}.member_string, {v}.member_Decimal.digits, {v}.member_BigInteger.digits,"
            f" CAST({v}.member_long AS string), CAST({v}.member_double AS string),"
            f" CAST({v}.member_boolean AS string), base64({v}.member_bytes))"
        )
    elif isinstance(target, BinaryType):
        out = f"{v}.member_bytes"
    elif isinstance(target, DateType):
        out = f"date_from_unix_date({v}.member_Date.days)"
    elif isinstance(target, TimestampNTZType):
        out = f"timestampadd(MICROSECOND, {v}.member_LocalDateTime.micros, {_NTZ_EPOCH})"
    elif isinstance(target, TimestampType):
        out = f"timestamp_micros({v}.member_Instant.micros)"
    else:  # pragma: no cover - spark_type never returns another type
        raise TypeError(f"no conversion to {t}")
    return f"CAST({out} AS {t})"
