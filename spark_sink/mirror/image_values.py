"""Image values -> the mirror's typed values, and key values -> tombstone key text, in Python (no Spark).

The twin of ``typemap.convert`` (the Spark mirror's SQL) and ``tombstones.key_text``: the mirror without
Spark must store what the Spark mirror stores, value for value, so a lake can move between the two and a
current-state read (Spark) agrees with either. A value (``image_events.Tagged``) is its branch of the
value union and the branch's value; a conversion reads the branches that can hold the target type and
gives None for the rest (an ``Unparsed`` value is NULL in every typed column: its text stays in the
changelog), as Spark's ``coalesce`` of ``try_cast``s does:

- integral and decimal targets take a ``long``, the digits of a ``BigInteger`` or ``Decimal`` (an integral
  target only digits without a point: Spark's ANSI ``try_cast`` refuses a fraction), a boolean as 0/1 and a
  ``Time``'s microseconds; a value out of the target's range is NULL; a decimal is rounded half up to the
  target's scale (``try_cast`` to ``decimal(p, s)``);
- floating targets take a ``double``, a ``long`` and digits;
- strings take a string, digits, a ``long``, a ``double`` (as Java prints it), a boolean and bytes (base64);
- binary takes bytes, dates a ``Date``, ``timestamp_ntz`` a ``LocalDateTime`` and ``timestamp`` an ``Instant``
  (microseconds since the epoch, as Arrow holds them).

The typed values come out in the form ``arrow_columns`` builds Arrow arrays from: decimals as their exact
digits (a string with the target's scale), dates as days, timestamps as microseconds.
"""

from __future__ import annotations

import base64
import decimal
import json
import math
import re
from collections.abc import Callable
from typing import Any, Final

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

from binlake.spark_sink.mirror.image_events import Tagged, value_kinds

Convert = Callable[[Tagged | None], Any]
_RANGES: Final[dict[type[DataType], tuple[int, int]]] = {
    ByteType: (-(2**7), 2**7 - 1),
    ShortType: (-(2**15), 2**15 - 1),
    IntegerType: (-(2**31), 2**31 - 1),
    LongType: (-(2**63), 2**63 - 1),
}
_DECIMALS: Final = decimal.Context(prec=100, rounding=decimal.ROUND_HALF_UP, Emax=10**6, Emin=-(10**6))
_PLAIN: Final = re.compile(r"(-?)([0-9]+)(?:\.([0-9]+))?")


_KINDS: Final = {name: index for index, name in enumerate(value_kinds())}
_BOOLEAN: Final = _KINDS["boolean"]
_LONG: Final = _KINDS["long"]
_DOUBLE: Final = _KINDS["double"]
_STRING: Final = _KINDS["string"]
_BYTES: Final = _KINDS["bytes"]
_DIGITS: Final = (_KINDS["BigInteger"], _KINDS["Decimal"])
_TIME: Final = _KINDS["Time"]


def _kind(name: str) -> int:
    return _KINDS[name]


def converter(target: DataType) -> Convert:
    """The conversion of an image value (None: the image lacks the column) into ``target`` (module doc)."""
    if isinstance(target, BooleanType):
        return _boolean
    if type(target) in _RANGES:
        low, high = _RANGES[type(target)]
        return lambda v: _integral(v, low, high)
    if isinstance(target, DecimalType):
        return lambda v: _decimal(v, target.precision, target.scale)
    if isinstance(target, FloatType | DoubleType):
        return _floating
    if isinstance(target, StringType):
        return _string
    if isinstance(target, BinaryType):
        return _only("bytes")
    if isinstance(target, DateType):
        return _only("Date", field=True)
    if isinstance(target, TimestampNTZType):
        return _only("LocalDateTime", field=True)
    if isinstance(target, TimestampType):
        return _only("Instant", field=True)
    raise TypeError(f"no conversion to {target.simpleString()}")  # spark_type never returns another type


def target(data_type: DataType) -> tuple[str, int, int]:
    """``data_type`` as the native fold's column type (``tail_fold.rs``): a kind and two numbers (an integral
    type's bounds, a decimal's precision and scale)."""
    if type(data_type) in _RANGES:
        low, high = _RANGES[type(data_type)]
        return ("integral", low, high)
    if isinstance(data_type, DecimalType):
        return ("decimal", data_type.precision, data_type.scale)
    simple: dict[type[DataType], str] = {
        BooleanType: "boolean",
        FloatType: "floating",
        DoubleType: "floating",
        StringType: "string",
        BinaryType: "binary",
        DateType: "date",
        TimestampNTZType: "local",
        TimestampType: "instant",
    }
    kind = simple.get(type(data_type))
    if kind is None:
        raise TypeError(f"no conversion to {data_type.simpleString()}")
    return (kind, 0, 0)


def _only(kind: str, *, field: bool = False) -> Convert:
    index = _kind(kind)

    def convert(value: Tagged | None) -> Any:
        if value is None or value[0] != index:
            return None
        return value[1][0] if field else value[1]

    return convert


def _boolean(value: Tagged | None) -> bool | None:
    if value is None:
        return None
    branch, raw = value
    if branch == _BOOLEAN:
        return bool(raw)
    if branch == _LONG:
        return bool(raw != 0)
    return None


def _whole(value: Tagged) -> int | None:
    """The integer an integral ``try_cast`` makes of a value, before the range check."""
    branch, raw = value
    if branch == _LONG:
        return int(raw)
    if branch in _DIGITS:
        return _parse_int(raw[0])
    if branch == _BOOLEAN:
        return int(bool(raw))
    if branch == _TIME:
        return int(raw[0])
    return None


def _parse_int(text: str) -> int | None:
    """Spark's ANSI string -> integer: optional sign and digits around surrounding blanks, no point."""
    stripped = text.strip()
    body = stripped[1:] if stripped[:1] in "+-" else stripped
    if not body.isdigit() or not body.isascii():
        return None
    return int(stripped)


def _integral(value: Tagged | None, low: int, high: int) -> int | None:
    if value is None:
        return None
    whole = _whole(value)
    return whole if whole is not None and low <= whole <= high else None


def _decimal(value: Tagged | None, precision: int, scale: int) -> str | None:
    if value is None:
        return None
    branch, raw = value
    exact: decimal.Decimal | None
    if branch in _DIGITS:
        fast = _plain_digits(raw[0], precision, scale)
        if fast is not None:
            return fast
        try:
            exact = decimal.Decimal(raw[0].strip(), context=_DECIMALS)
        except decimal.InvalidOperation:
            return None
        if not exact.is_finite():
            return None
    else:
        whole = _whole(value)
        if whole is None or abs(whole) >= 10 ** (precision - scale):
            return None
        return f"{whole}.{'0' * scale}" if scale else str(whole)
    try:
        rounded = exact.quantize(decimal.Decimal(1).scaleb(-scale), context=_DECIMALS)
    except decimal.InvalidOperation:
        return None  # more digits at the scale than the context's 100: far beyond any precision (at most 38)
    if abs(rounded) >= decimal.Decimal(10) ** (precision - scale):
        return None
    return format(rounded.copy_abs() if rounded.is_zero() else rounded, "f")  # one zero: 0.00, never -0.00


def _plain_digits(text: str, precision: int, scale: int) -> str | None:
    """``_decimal`` of digits that need no rounding (at most ``scale`` of them after the point, the rest
    within ``precision``), without ``decimal``: most values, a third of the conversion's time; None
    where the general path must decide."""
    match = _PLAIN.fullmatch(text)
    if match is None:
        return None
    sign, whole, fraction = match.group(1), match.group(2).lstrip("0") or "0", match.group(3) or ""
    if len(fraction) > scale or (whole != "0" and len(whole) > precision - scale):
        return None
    fraction += "0" * (scale - len(fraction))
    if whole == "0" and not fraction.strip("0"):
        sign = ""
    return f"{sign}{whole}.{fraction}" if scale else f"{sign}{whole}"


def _floating(value: Tagged | None) -> float | None:
    if value is None:
        return None
    branch, raw = value
    if branch == _DOUBLE:
        return float(raw)
    if branch == _LONG:
        return float(raw)
    if branch in _DIGITS:
        try:
            return float(raw[0].strip())
        except ValueError:
            return None
    return None


def _string(value: Tagged | None) -> str | None:
    if value is None:
        return None
    branch, raw = value
    if branch == _STRING:
        return str(raw)
    if branch in _DIGITS:
        return str(raw[0])
    if branch == _LONG:
        return str(raw)
    if branch == _DOUBLE:
        return java_double(float(raw))
    if branch == _BOOLEAN:
        return "true" if raw else "false"
    if branch == _BYTES:
        return base64.b64encode(raw).decode("ascii")
    return None


def java_double(value: float) -> str:
    """A double as Java's ``Double.toString`` (Spark's ``CAST(double AS STRING)``) prints it."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    exact = decimal.Decimal(repr(value))  # the shortest digits that read back as ``value``, as Java's
    if 1e-3 <= abs(value) < 1e7:
        text = format(exact, "f")
        return text if "." in text else text + ".0"
    sign, numerals, exp = exact.as_tuple()
    assert isinstance(exp, int)
    digits = "".join(map(str, numerals)).rstrip("0") or "0"
    power = exp + len(numerals) - 1
    return f"{'-' if sign else ''}{digits[0]}.{digits[1:] or '0'}E{power}"


# ---------------------------------------------------------------- tombstone key text


def key_text(values: list[Any], types: list[DataType]) -> str:
    """The key whose typed values (``converter``'s) are ``values``, as the tombstones hold it: the twin of
    ``tombstones.key_text`` (JSON array of each value in a form a type widening does not change)."""
    texts = [_canonical(v, t) for v, t in zip(values, types, strict=True)]
    return _jackson(texts)


def _canonical(value: Any, data_type: DataType) -> str | None:
    if value is None:
        return None
    if isinstance(data_type, DecimalType):
        text = str(value)
        return text.rstrip("0").rstrip(".") if "." in text else text
    if isinstance(data_type, DateType):
        return _date_text(int(value)) + " 00:00:00"
    if isinstance(data_type, FloatType):
        return java_double(_as_float32(float(value)))
    if isinstance(data_type, DoubleType):
        return java_double(float(value))
    if isinstance(data_type, TimestampType):
        return str(int(value))
    if isinstance(data_type, TimestampNTZType):
        return _ntz_text(int(value))
    if isinstance(data_type, BinaryType):
        return bytes(value).hex().upper()
    if isinstance(data_type, BooleanType):
        return "true" if value else "false"
    return str(value)


def _as_float32(value: float) -> float:
    import struct

    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def _date_text(days: int) -> str:
    """A day count as Spark prints a date: proleptic Gregorian, a year beyond 9999 with ``+``, before 0 with
    ``-`` (Python's ``datetime`` stops at years 1 and 9999; a date column may hold any int32 of days)."""
    year, month, day = _civil(days)
    shown = f"+{year}" if year > 9999 else (f"-{-year:04d}" if year < 0 else f"{year:04d}")
    return f"{shown}-{month:02d}-{day:02d}"


def _civil(days: int) -> tuple[int, int, int]:
    """(year, month, day) of a day count since 1970-01-01, proleptic Gregorian (H. Hinnant's
    ``civil_from_days``; floor division makes it right for negative counts)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    return yoe + era * 400 + (month <= 2), month, day


def _ntz_text(micros: int) -> str:
    days, rest = divmod(micros, 86_400_000_000)
    seconds, fraction = divmod(rest, 1_000_000)
    text = f"{_date_text(days)} {seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    if fraction:
        text += "." + f"{fraction:06d}".rstrip("0")
    return text


def _jackson(texts: list[str | None]) -> str:
    """A JSON array of strings (and nulls) as Spark's ``to_json`` (Jackson) writes it: no spaces, non-ASCII
    kept, control characters escaped with upper-case hex."""
    parts: list[str] = []
    for text in texts:
        if text is None:
            parts.append("null")
            continue
        encoded = json.dumps(text, ensure_ascii=False)
        parts.append(_upper_escapes(encoded))
    return "[" + ",".join(parts) + "]"


def _upper_escapes(encoded: str) -> str:
    if "\\u" not in encoded:
        return encoded
    out: list[str] = []
    i = 0
    while i < len(encoded):
        if encoded.startswith("\\\\", i):
            out.append("\\\\")
            i += 2
        elif encoded.startswith("\\u", i):
            out.append("\\u" + encoded[i + 2 : i + 6].upper())
            i += 6
        else:
            out.append(encoded[i])
            i += 1
    return "".join(out)
