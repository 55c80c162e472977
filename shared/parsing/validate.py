"""Envelope checks every event passes before it leaves the parser boundary.

Parsers convert vendor fields one by one; this catches, in one place, envelope
numbers that no canonical encoding can carry (a ``ts_ms`` beyond int64, an
offset below zero, a column's precision or scale beyond int32...), so a hostile
or corrupt message becomes a reject instead of an encoder failure (or a wrong
value) further down the line.
"""

from __future__ import annotations

from typing import Final

from binlake.shared.event.model import OPS, ChangeEvent, Column
from binlake.shared.event.values import INT64_MAX, INT64_MIN
from binlake.shared.parsing.errors import BAD_FIELD, INTERNAL, RejectError

_INT32_MAX: Final = 2**31 - 1
_INT32_MIN: Final = -(2**31)


def _in_long(value: int | None) -> bool:
    return value is None or INT64_MIN <= value <= INT64_MAX


def _in_int(value: int | None) -> bool:
    return value is None or _INT32_MIN <= value <= _INT32_MAX


def check_event(event: ChangeEvent) -> None:
    if not (_in_long(event.ts_ms) and _in_long(event.ingest_ts_ms) and _in_long(event.source.binlog_pos)):
        raise RejectError(
            BAD_FIELD,
            f"a time or position is outside the 64-bit range (ts_ms={event.ts_ms}, "
            f"ingest_ts_ms={event.ingest_ts_ms}, binlog_pos={event.source.binlog_pos})",
        )
    if event.op not in OPS:
        raise RejectError(INTERNAL, f"parser produced unknown op {event.op!r}")
    origin = event.origin
    if not (0 <= origin.row <= _INT32_MAX and 0 <= origin.partition <= _INT32_MAX and _in_long(origin.offset)):
        raise RejectError(BAD_FIELD, f"row index {origin.row} is outside the supported range")
    unfit = column_beyond_int(event.columns)
    if unfit is not None:
        raise RejectError(BAD_FIELD, f"column {unfit!r} declares a precision or scale outside the 32-bit range")


def column_beyond_int(columns: list[Column]) -> str | None:
    """The first column whose precision or scale the canonical schema (an Avro int) cannot hold, or None."""
    for column in columns:
        if not (_in_int(column.precision) and _in_int(column.scale)):
            return column.name
    return None
