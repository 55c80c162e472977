"""Dates and times: the epochs, and the readings vendor modules use beside the typed conversions.

The readings of date and time texts (``parse_date``, ``parse_time``,
``parse_local_datetime``, ``parse_instant``) are the native kernel's typed
conversions (``shared/kernel/src/conversion.rs``), named here for the vendor
modules that read a text outside a typed column. Each returns a canonical value
or raises ``UnreadableValue`` (a ValueError) describing the text by its length,
never quoting it (reasons carry no row values). Sub-microsecond digits
(OceanBase and Oracle print up to nine) are truncated: microseconds are the
precision of MySQL, Avro's timestamp-micros and Spark.
"""

from __future__ import annotations

import datetime as _dt
import functools
from typing import Final, cast

from binlake.shared.event.values import SqlTime, Unparsed
from binlake.shared.kernel._kernel import Conversion
from binlake.shared.parsing.errors import UnreadableValue, describe

UTC: Final = _dt.UTC
EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_DATE: Final = _dt.date(1970, 1, 1)
_LOCAL_EPOCH: Final = _dt.datetime(1970, 1, 1)
_EPOCH_ORDINAL: Final = EPOCH_DATE.toordinal()

_DATE: Final = Conversion("date")
_TIME: Final = Conversion("time")
_LOCAL_DATETIME: Final = Conversion("local_datetime")


def parse_date(text: str) -> _dt.date | Unparsed:
    """``YYYY-MM-DD`` (what ``date.fromisoformat`` reads); MySQL zero dates are kept verbatim as Unparsed."""
    return cast("_dt.date | Unparsed", _DATE(text))


def parse_time(text: str) -> SqlTime:
    """``[-]HH:MM:SS[.fraction]``, hours up to 838 as MySQL allows."""
    return cast("SqlTime", _TIME(text))


def parse_local_datetime(text: str) -> _dt.datetime | Unparsed:
    """``YYYY-MM-DD[ T]HH:MM:SS[.fraction]`` without zone: a MySQL DATETIME."""
    return cast("_dt.datetime | Unparsed", _LOCAL_DATETIME(text))


@functools.lru_cache(maxsize=256)
def _instant(zone: _dt.tzinfo) -> Conversion:
    return Conversion("instant", None, zone)


def parse_instant(text: str, wall_clock_zone: _dt.tzinfo) -> _dt.datetime | Unparsed:
    """A MySQL TIMESTAMP in any rendering vendors use, as a UTC instant.

    Accepted: epoch seconds with optional fraction (``1606233662.012345``), ISO
    8601 with ``Z`` or an offset, a date-time followed by an IANA zone name
    (``2020-11-25 00:01:02.012345 Asia/Shanghai``), and a wall-clock date-time,
    which is read in ``wall_clock_zone`` (the configured source time zone).
    """
    return cast("_dt.datetime | Unparsed", _instant(wall_clock_zone)(text))


def date_from_days(days: int) -> _dt.date:
    """Days since 1970-01-01 (Debezium io.debezium.time.Date, Avro date)."""
    try:
        return EPOCH_DATE + _dt.timedelta(days=days)
    except OverflowError:
        raise UnreadableValue(f"expected days since 1970-01-01 within years 1-9999, got {describe(days)}") from None


def local_from_epoch_micros(micros: int) -> _dt.datetime:
    """A wall-clock date-time encoded as micros since 1970-01-01T00:00 (no zone)."""
    try:
        return _LOCAL_EPOCH + _dt.timedelta(microseconds=micros)
    except OverflowError:
        raise UnreadableValue(
            f"expected microseconds since 1970-01-01 within years 1-9999, got {describe(micros)}"
        ) from None


def instant_from_epoch_micros(micros: int) -> _dt.datetime:
    try:
        return EPOCH + _dt.timedelta(microseconds=micros)
    except OverflowError:
        raise UnreadableValue(
            f"expected microseconds since the epoch within years 1-9999, got {describe(micros)}"
        ) from None


_MS_PER_DAY: Final = 86_400_000


def epoch_ms_of(value: _dt.datetime) -> int:
    """Milliseconds since the epoch of an aware datetime (rounded down, as ``// timedelta(milliseconds=1)``)."""
    # A timedelta's days may be negative, its seconds and microseconds are not: the sum is the floor. (No
    # timedelta of a millisecond and no division per call: vendor envelopes take two of these a message.)
    delta = value - EPOCH
    return delta.days * _MS_PER_DAY + delta.seconds * 1000 + delta.microseconds // 1000


def compact_local_to_ms(text: str, zone_: _dt.tzinfo) -> int:
    """``yyyyMMddHHmmss`` (Tencent CKafka TIME) read in ``zone_``, as epoch ms."""
    if len(text) != 14 or not text.isascii() or not text.isdigit():
        raise UnreadableValue(f"expected yyyyMMddHHmmss, got {describe(text)}")
    try:
        # Fixed widths: fourteen ASCII digits split one way only (as strptime's "%Y%m%d%H%M%S" splits them, at a
        # fraction of its cost).
        local = _dt.datetime(
            int(text[:4]), int(text[4:6]), int(text[6:8]), int(text[8:10]), int(text[10:12]), int(text[12:])
        )
    except ValueError:  # its message quotes the numbers
        raise UnreadableValue("expected yyyyMMddHHmmss, got 14 digits that are no valid date-time") from None
    return _wall_clock_ms(local, zone_)


def local_text_to_ms(text: str, zone_: _dt.tzinfo) -> int:
    """``YYYY-MM-DD[ T]HH:MM:SS[.f]`` read in ``zone_``, as epoch ms."""
    local = parse_local_datetime(text)
    if isinstance(local, Unparsed):
        raise UnreadableValue(f"expected a date-time, got {describe(text)}")
    return _wall_clock_ms(local, zone_)


def _wall_clock_ms(local: _dt.datetime, zone_: _dt.tzinfo) -> int:
    """Epoch ms of a wall clock in ``zone_``: its microseconds less the zone's offset there (as
    ``epoch_ms_of(local.replace(tzinfo=zone_))``: the offset of fold 0), in integers."""
    offset = zone_.utcoffset(local)
    if offset is None:
        raise UnreadableValue("the source time zone gives no offset")
    seconds = (local.toordinal() - _EPOCH_ORDINAL) * 86_400 + (local.hour * 60 + local.minute) * 60 + local.second
    offset_us = (offset.days * 86_400 + offset.seconds) * 1_000_000 + offset.microseconds
    return (seconds * 1_000_000 + local.microsecond - offset_us) // 1000
