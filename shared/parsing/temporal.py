"""Reading the date and time renderings vendors use, without loss.

Every function takes the vendor's text and returns a canonical value, or raises
``UnreadableValue`` (a ValueError) with a message naming what was expected and
describing the text by its length, never quoting it (reasons carry no row values). Sub-microsecond digits
(OceanBase and Oracle print up to nine) are truncated: microseconds are the
precision of MySQL, Avro's timestamp-micros and Spark.
"""

from __future__ import annotations

import datetime as _dt
import re
from decimal import Decimal, InvalidOperation
from typing import Final

from binlake.shared.event.values import SqlTime, Unparsed
from binlake.shared.parsing.context import zone
from binlake.shared.parsing.errors import UnreadableValue, describe

UTC: Final = _dt.UTC
EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_DATE: Final = _dt.date(1970, 1, 1)
_LOCAL_EPOCH: Final = _dt.datetime(1970, 1, 1)

_TIME_RE: Final = re.compile(r"(-)?(\d{1,3}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?")
_ZONE_SUFFIX_RE: Final = re.compile(r"^(.*\d)\s+([A-Za-z][A-Za-z0-9_+\-/]*)$")
_FRACTION_RE: Final = re.compile(r"\.(\d{7,})")


def _trim_fraction(text: str) -> str:
    """Cut fractional seconds to six digits (fromisoformat wants at most six)."""
    if len(text) <= 26:  # "YYYY-MM-DD HH:MM:SS.ffffff" at most: nothing to cut
        return text
    return _FRACTION_RE.sub(lambda m: "." + m.group(1)[:6], text, count=1)


def _is_zero_date(text: str) -> bool:
    # MySQL zero dates and dates with zero parts: 0000-00-00, 2020-00-00, 2020-01-00.
    head = text[:10]
    return len(head) == 10 and (head[0:4] == "0000" or head[5:7] == "00" or head[8:10] == "00")


def with_zone(value: _dt.datetime, tzinfo: _dt.tzinfo) -> _dt.datetime:
    """``value.replace(tzinfo=tzinfo)``, which CPython 3.11 runs four times slower (keyword parsing)."""
    return _dt.datetime.combine(value, value.time(), tzinfo)


def parse_date(text: str) -> _dt.date | Unparsed:
    """``YYYY-MM-DD``; MySQL zero dates are kept verbatim as Unparsed."""
    try:
        return _dt.date.fromisoformat(text)
    except ValueError:
        if _is_zero_date(text):
            return Unparsed(text)
        raise UnreadableValue(f"expected a date YYYY-MM-DD, got {describe(text)}") from None


def date_from_days(days: int) -> _dt.date:
    """Days since 1970-01-01 (Debezium io.debezium.time.Date, Avro date)."""
    try:
        return EPOCH_DATE + _dt.timedelta(days=days)
    except OverflowError:
        raise UnreadableValue(f"expected days since 1970-01-01 within years 1-9999, got {describe(days)}") from None


def parse_time(text: str) -> SqlTime:
    """``[-]HH:MM:SS[.fraction]``, hours up to 838 as MySQL allows."""
    m = _TIME_RE.fullmatch(text.strip())
    if m is None:
        raise UnreadableValue(f"expected a time [-]HH:MM:SS[.ffffff], got {describe(text)}")
    sign, hours, minute_text, second_text, frac = m.groups()
    minutes = int(minute_text)
    seconds = int(second_text)
    if minutes > 59 or seconds > 59:
        raise UnreadableValue(
            f"expected a time [-]HH:MM:SS[.ffffff] with minutes and seconds below 60, got {describe(text)}"
        )
    micros = ((int(hours) * 60 + minutes) * 60 + seconds) * 1_000_000
    if frac:
        micros += int((frac + "00000")[:6])
    return SqlTime(-micros if sign else micros)


def parse_local_datetime(text: str) -> _dt.datetime | Unparsed:
    """``YYYY-MM-DD[ T]HH:MM:SS[.fraction]`` without zone: a MySQL DATETIME."""
    try:
        value = _dt.datetime.fromisoformat(_trim_fraction(text))
    except ValueError:
        if _is_zero_date(text):
            return Unparsed(text)
        raise UnreadableValue(f"expected a date-time YYYY-MM-DD HH:MM:SS[.ffffff], got {describe(text)}") from None
    if value.tzinfo is not None:
        raise UnreadableValue("expected a date-time without zone, got one with a zone offset")
    return value


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


def instant_from_epoch_text(text: str) -> _dt.datetime:
    """``SECONDS[.fraction]`` since the epoch (OMS, DRS JSON), exact to the microsecond."""
    try:
        seconds = Decimal(text)
    except InvalidOperation:
        raise UnreadableValue(f"expected epoch seconds, got {describe(text)}") from None
    if not seconds.is_finite() or seconds.adjusted() > 20:
        raise UnreadableValue(f"expected epoch seconds within years 1-9999, got {describe(text)}")
    micros = int(seconds.scaleb(6).to_integral_value(rounding="ROUND_FLOOR"))
    return instant_from_epoch_micros(micros)


def parse_instant(text: str, wall_clock_zone: _dt.tzinfo) -> _dt.datetime | Unparsed:
    """A MySQL TIMESTAMP in any rendering vendors use, as a UTC instant.

    Accepted: epoch seconds with optional fraction (``1606233662.012345``), ISO
    8601 with ``Z`` or an offset, a date-time followed by an IANA zone name
    (``2020-11-25 00:01:02.012345 Asia/Shanghai``), and a wall-clock date-time,
    which is read in ``wall_clock_zone`` (the configured source time zone).
    """
    try:
        return _instant(text, wall_clock_zone)
    except OverflowError:  # a date-time at the calendar's edge that its zone moves outside it in UTC
        raise UnreadableValue(f"expected a timestamp within years 1-9999 in UTC, got {describe(text)}") from None


def _instant(text: str, wall_clock_zone: _dt.tzinfo) -> _dt.datetime | Unparsed:
    size = len(text)
    if (
        19 <= size <= 27
        and text[4] == "-"
        and text[10] in " T"
        and ((size <= 26 and text[-1].isdigit()) or text[-1] == "Z")
    ):
        # Fast path for the common renderings "YYYY-MM-DD HH:MM:SS[.ffffff]"
        # (Canal) and "YYYY-MM-DDTHH:MM:SS[.ffffff]Z" (Debezium): read as the
        # general path below reads them.
        try:
            value = _dt.datetime.fromisoformat(text)
        except ValueError:
            pass
        else:
            if value.tzinfo is not None:  # "...+08:00": the text carries its own offset
                return value.astimezone(UTC)
            if wall_clock_zone is UTC:
                return with_zone(value, UTC)
            return with_zone(value, wall_clock_zone).astimezone(UTC)
    stripped = text.strip()
    if stripped and (stripped[0].isdigit() or stripped[0] == "-") and _looks_numeric(stripped):
        return instant_from_epoch_text(stripped)
    m = _ZONE_SUFFIX_RE.match(stripped)
    if m is not None and not m.group(2).upper().startswith(("AM", "PM")):
        try:
            local = parse_local_datetime(m.group(1))
            tzinfo = None if isinstance(local, Unparsed) else zone(m.group(2))
        except ValueError:  # zone()'s message names the zone: a fragment of the value
            raise UnreadableValue(
                f"expected a timestamp (a date-time followed by an IANA zone name), got {describe(text)}"
            ) from None
        if isinstance(local, Unparsed):
            return Unparsed(text)
        return local.replace(tzinfo=tzinfo).astimezone(UTC)
    try:
        value = _dt.datetime.fromisoformat(_trim_fraction(stripped.replace("Z", "+00:00")))
    except ValueError:
        if _is_zero_date(stripped):
            return Unparsed(text)
        raise UnreadableValue(
            f"expected a timestamp (epoch seconds, ISO 8601 or YYYY-MM-DD HH:MM:SS), got {describe(text)}"
        ) from None
    if value.tzinfo is None:
        value = with_zone(value, wall_clock_zone)
    return value.astimezone(UTC)


def _looks_numeric(text: str) -> bool:
    body = text[1:] if text[0] == "-" else text
    head, _, tail = body.partition(".")
    return head.isdigit() and (tail == "" or tail.isdigit())


def epoch_ms_of(value: _dt.datetime) -> int:
    """Milliseconds since the epoch of an aware datetime."""
    return (value - EPOCH) // _dt.timedelta(milliseconds=1)


def compact_local_to_ms(text: str, zone_: _dt.tzinfo) -> int:
    """``yyyyMMddHHmmss`` (Tencent CKafka TIME) read in ``zone_``, as epoch ms."""
    if len(text) != 14 or not text.isdigit():
        raise UnreadableValue(f"expected yyyyMMddHHmmss, got {describe(text)}")
    try:
        local = _dt.datetime.strptime(text, "%Y%m%d%H%M%S")
    except ValueError:  # strptime's message quotes the text
        raise UnreadableValue("expected yyyyMMddHHmmss, got 14 digits that are no valid date-time") from None
    return epoch_ms_of(local.replace(tzinfo=zone_))


def local_text_to_ms(text: str, zone_: _dt.tzinfo) -> int:
    """``YYYY-MM-DD[ T]HH:MM:SS[.f]`` read in ``zone_``, as epoch ms."""
    local = parse_local_datetime(text)
    if isinstance(local, Unparsed):
        raise UnreadableValue(f"expected a date-time, got {describe(text)}")
    return epoch_ms_of(local.replace(tzinfo=zone_))
