"""DTS ``Record`` image values (the union items of before/afterImages) to canonical values.

fastavro returns each union item as ``(record name, fields)`` (``return_record_name``),
so Integer, Decimal and Float stay apart even where their fields look alike.
A value that cannot be read raises ``UnreadableValue``, describing it without
quoting it (reasons carry no row values).
"""

from __future__ import annotations

import codecs
import datetime as _dt
import math
import re
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from binlake.shared.event.values import SqlTime, Unparsed, Value, integer
from binlake.shared.parsing.context import zone
from binlake.shared.parsing.errors import UnreadableValue, describe
from binlake.shared.parsing.temporal import EPOCH, UTC

NS: Final = "com.alibaba.dts.formats.avro."


class Absent:
    """EmptyObject NONE: the column's value is unknown (not in the image)."""


ABSENT: Final = Absent()

INVALID_TIMESTAMP: Final = -9223372022400
"""OMS writes this ``Timestamp.timestamp`` for an invalid MySQL TIMESTAMP (its docs: 非法時間)."""

# MySQL column type codes (``Field.dataTypeNumber``) -> (type name, logical type).
TYPE_CODES: Final[dict[int, tuple[str, str]]] = {
    0: ("DECIMAL", "decimal"),
    1: ("TINY", "int16"),  # signedness is not sent: the width that holds both
    2: ("SHORT", "int32"),
    3: ("LONG", "int64"),
    4: ("FLOAT", "float32"),
    5: ("DOUBLE", "float64"),
    6: ("NULL", "unknown"),
    7: ("TIMESTAMP", "timestamp"),
    8: ("LONGLONG", "integer"),  # BIGINT UNSIGNED exceeds int64
    9: ("INT24", "int32"),
    10: ("DATE", "date"),
    11: ("TIME", "time"),
    12: ("DATETIME", "datetime"),
    13: ("YEAR", "year"),
    14: ("NEWDATE", "date"),
    15: ("VARCHAR", "string"),
    16: ("BIT", "bit"),
    17: ("TIMESTAMP2", "timestamp"),
    18: ("DATETIME2", "datetime"),
    19: ("TIME2", "time"),
    245: ("JSON", "json"),
    246: ("NEWDECIMAL", "decimal"),
    247: ("ENUM", "enum"),
    248: ("SET", "set"),
    249: ("TINY_BLOB", "bytes"),
    250: ("MEDIUM_BLOB", "bytes"),
    251: ("LONG_BLOB", "bytes"),
    252: ("BLOB", "bytes"),
    253: ("VAR_STRING", "string"),
    254: ("STRING", "string"),
    255: ("GEOMETRY", "geometry"),
}
DATE_CODES: Final = frozenset({10, 14})
TIME_CODES: Final = frozenset({11, 19})
DATETIME_CODES: Final = frozenset({12, 18})
TIMESTAMP_CODES: Final = frozenset({7, 17})
YEAR_CODE: Final = 13
STRING_CODES: Final = frozenset({15, 253, 254})
BLOB_CODES: Final = frozenset({249, 250, 251, 252})


def _mysql_latin1_table() -> str:
    # MySQL latin1 is Windows-1252, with the five bytes cp1252 leaves undefined
    # (0x81 0x8D 0x8F 0x90 0x9D) mapped to the same code points, as MySQL does.
    chars = []
    for byte in range(256):
        try:
            chars.append(bytes([byte]).decode("cp1252"))
        except UnicodeDecodeError:
            chars.append(chr(byte))
    return "".join(chars)


_LATIN1_TABLE: Final = _mysql_latin1_table()
_MYSQL_LATIN1: Final = "mysql-latin1"

# MySQL character set names -> Python codecs (names compared without '-'/'_').
_CHARSETS: Final[dict[str, str]] = {
    "utf8": "utf-8", "utf8mb3": "utf-8", "utf8mb4": "utf-8", "ascii": "ascii", "latin1": _MYSQL_LATIN1,
    "gbk": "gbk", "gb2312": "gb2312", "gb18030": "gb18030", "big5": "big5", "utf16": "utf-16-be",
    "utf16le": "utf-16-le", "utf32": "utf-32-be", "ucs2": "utf-16-be", "sjis": "shift_jis", "cp932": "cp932",
    "ujis": "euc_jp", "eucjpms": "euc_jp", "euckr": "euc_kr", "latin2": "iso8859_2", "latin5": "iso8859_9",
    "latin7": "iso8859_13", "greek": "iso8859_7", "hebrew": "iso8859_8", "cp1250": "cp1250", "cp1251": "cp1251",
    "cp1256": "cp1256", "cp1257": "cp1257", "koi8r": "koi8_r", "koi8u": "koi8_u", "cp850": "cp850",
    "cp852": "cp852", "cp866": "cp866", "tis620": "tis_620", "macroman": "mac_roman", "macce": "mac_latin2",
}  # fmt: skip
_BINARY: Final = "binary"
_CODEC_OF: dict[str, str] = {}
"""Codecs by charset name as sent (``decode_text``): a table sends the same few names."""
_CODECS_REMEMBERED: Final = 256
_KINDS: Final = (
    "EmptyObject", "Integer", "Character", "Decimal", "Float", "Timestamp", "DateTime", "TimestampWithTimeZone",
    "BinaryGeometry", "BinaryObject", "TextGeometry", "TextObject",
)  # fmt: skip
_KIND_OF: Final[dict[str, str]] = {name: name for name in _KINDS} | {NS + name: name for name in _KINDS}
"""An image item's record name (full, or bare) to its kind: one lookup, no new string per value."""
_OFFSET: Final = re.compile(r"(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?")


def decode_text(raw: bytes, charset: str) -> str | bytes:
    """Character bytes in a MySQL charset as text; the ``binary`` charset stays bytes."""
    codec = _CODEC_OF.get(charset)
    if codec is None:
        codec = _codec_of(charset)
    if codec == _BINARY:
        return raw
    if codec == _MYSQL_LATIN1:
        return codecs.charmap_decode(raw, "strict", _LATIN1_TABLE)[0]
    try:
        return raw.decode(codec)
    except UnicodeDecodeError as exc:
        raise UnreadableValue(f"bytes are not valid {charset}: {exc.reason} at byte {exc.start}") from None


def _codec_of(charset: str) -> str:
    """The codec of a MySQL charset name (``_BINARY`` for ``binary``), remembered by the name as sent."""
    key = charset.lower().replace("-", "").replace("_", "")
    codec = _BINARY if key == "binary" else _CHARSETS.get(key)
    if codec is None:
        raise UnreadableValue(f"unknown character set {charset[:40]!r}")  # the column's, not row data
    if len(_CODEC_OF) >= _CODECS_REMEMBERED:
        _CODEC_OF.clear()
    _CODEC_OF[charset] = codec
    return codec


def convert(item: Any, code: int, zone_: _dt.tzinfo) -> Value | Absent:
    """One image item to a canonical value; ValueError when it cannot be read."""
    if item is None:
        return None
    name, fields = item
    kind = _KIND_OF.get(name)
    if kind is None:
        kind = name.removeprefix(NS)  # an unknown type, named in the reason below
    if kind == "EmptyObject":
        return ABSENT if fields == "NONE" else None
    if kind == "Integer":
        text = fields["value"].strip()
        digits = text[1:] if text[:1] == "-" else text
        if not digits.isdecimal():  # what ``-?\d+`` matches: str.isdecimal is re's \d
            raise UnreadableValue(f"Integer value is not an integer: {describe(fields['value'])}")
        return integer(int(text))
    if kind == "Character":
        return decode_text(fields["value"], fields["charset"])
    if kind == "Decimal":
        return _decimal(fields["value"])
    if kind == "Float":
        number: float = fields["value"]
        if not math.isfinite(number):
            raise UnreadableValue("Float value is not a SQL number: NaN or infinite")
        return number
    if kind == "Timestamp":
        return _instant(fields["timestamp"], fields["millis"])
    if kind == "DateTime":
        return _date_time(fields, code, zone_)
    if kind == "TimestampWithTimeZone":
        return _zoned(fields["value"], fields["timezone"])
    if kind in ("BinaryGeometry", "BinaryObject", "TextGeometry", "TextObject"):
        value: str | bytes = fields["value"]
        return value
    raise UnreadableValue(f"unexpected image value of type {kind!r}")  # a schema name


def _decimal(text: str) -> Decimal:
    try:
        number = Decimal(text.strip())
    except InvalidOperation:
        raise UnreadableValue(f"Decimal value is not a decimal number: {describe(text)}") from None
    if not number.is_finite():
        raise UnreadableValue("Decimal value is not a SQL decimal: NaN or infinite")
    return number


def _instant(seconds: int, micros: int) -> _dt.datetime | Unparsed:
    if seconds == INVALID_TIMESTAMP:
        return Unparsed(str(seconds))  # an invalid TIMESTAMP in the source, kept as OMS wrote it
    if not 0 <= micros < 1_000_000:
        raise UnreadableValue(f"Timestamp millis (microseconds) is outside 0..999999: {describe(micros)}")
    try:
        return EPOCH + _dt.timedelta(0, seconds, micros)  # (days, seconds, microseconds): no keyword call
    except OverflowError:
        raise UnreadableValue(f"Timestamp seconds are outside years 1-9999: {describe(seconds)}") from None


def _part(fields: dict[str, Any], key: str) -> int:
    value = fields.get(key)
    if value is None:
        raise UnreadableValue(f"DateTime has no {key}")
    number: int = value
    return number


def _render(fields: dict[str, Any], with_date: bool, with_time: bool) -> str:
    parts = []
    if with_date:
        parts.append(f"{fields.get('year') or 0:04d}-{fields.get('month') or 0:02d}-{fields.get('day') or 0:02d}")
    if with_time:
        text = f"{fields.get('hour') or 0:02d}:{fields.get('minute') or 0:02d}:{fields.get('second') or 0:02d}"
        if fields.get("millis"):
            text += f".{fields['millis']:06d}"
        parts.append(text)
    return " ".join(parts)


def _date_time(fields: dict[str, Any], code: int, zone_: _dt.tzinfo) -> Value:
    # A known type code decides; an unknown one, the parts the value holds.
    known = code in TYPE_CODES
    has_date = not known and (fields.get("month") is not None or fields.get("day") is not None)
    has_time = not known and fields.get("hour") is not None
    if code == YEAR_CODE or (not known and not has_date and not has_time):
        return _part(fields, "year")
    if code in DATE_CODES or (has_date and not has_time):
        return _local(fields, with_time=False)
    if code in TIME_CODES or (has_time and not has_date):
        return _time(fields)
    local = _local(fields, with_time=True)
    if code in TIMESTAMP_CODES and isinstance(local, _dt.datetime):
        return local.replace(tzinfo=zone_).astimezone(UTC)  # a wall clock of the source's zone
    return local


def _local(fields: dict[str, Any], with_time: bool) -> _dt.date | Unparsed:
    """A date, or a local date-time (a ``datetime``) when ``with_time``."""
    year, month, day = _part(fields, "year"), _part(fields, "month"), _part(fields, "day")
    hour = minute = second = micros = 0
    if with_time:
        hour, minute, second = _part(fields, "hour"), _part(fields, "minute"), _part(fields, "second")
        micros = fields.get("millis") or 0
        if not (0 <= hour < 24 and 0 <= minute < 60 and 0 <= second < 60 and 0 <= micros < 1_000_000):
            raise UnreadableValue("DateTime time of day is out of range")
    try:
        if not with_time:
            return _dt.date(year, month, day)
        return _dt.datetime(year, month, day, hour, minute, second, micros)
    except ValueError:
        # Zero dates (0000-00-00) and other invalid dates MySQL can hold: kept as their text.
        return Unparsed(_render(fields, True, with_time))


def _time(fields: dict[str, Any]) -> SqlTime:
    hour, minute, second = _part(fields, "hour"), _part(fields, "minute"), _part(fields, "second")
    micros = fields.get("millis") or 0
    negative = hour < 0 or minute < 0 or second < 0 or micros < 0
    hour, minute, second, micros = abs(hour), abs(minute), abs(second), abs(micros)
    if minute > 59 or second > 59 or micros > 999_999 or hour > 838:
        raise UnreadableValue("DateTime is not a MySQL TIME: a part is out of range")
    total = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micros
    return SqlTime(-total if negative else total)


def _zoned(fields: dict[str, Any], name: str) -> _dt.date | Unparsed:
    local = _local(fields, with_time=True)
    if not isinstance(local, _dt.datetime):
        return local
    return local.replace(tzinfo=_zone(name)).astimezone(UTC)


def _zone(name: str) -> _dt.tzinfo:
    m = _OFFSET.fullmatch(name.strip())
    if m is not None:
        sign, hours, minutes = m.groups()
        delta = _dt.timedelta(hours=int(hours), minutes=int(minutes or 0))
        if delta >= _dt.timedelta(hours=24):
            raise UnreadableValue(f"time zone offset is out of range: {describe(name)}")
        return _dt.timezone(-delta if sign == "-" else delta)
    try:
        return zone(name.strip())
    except ValueError:  # its message names the zone, a part of the value
        raise UnreadableValue(f"unknown time zone: {describe(name)}") from None
