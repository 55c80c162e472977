"""Small helpers several vendor parsers share."""

from __future__ import annotations

from typing import Final

from binlake.shared.event.model import ChangeEvent, Ddl, Origin, Source
from binlake.shared.event.values import INT64_MAX, INT64_MIN
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.ddl import ddl_kind
from binlake.shared.parsing.errors import BAD_FIELD, RejectError

_SECONDS_LIMIT: Final = 100_000_000_000
"""Epoch values below this are seconds (year 5138 in seconds, 1973 in ms)."""


def epoch_ms(value: int) -> int:
    """Milliseconds from a vendor epoch that may be in seconds or milliseconds.

    Several vendors document milliseconds and send seconds in some messages
    (Tencent CKafka's canal-format DDL ``es``), so the unit is read from the size.
    """
    ms = value * 1000 if abs(value) < _SECONDS_LIMIT else value
    if not INT64_MIN <= ms <= INT64_MAX:
        raise RejectError(BAD_FIELD, f"epoch time {value} is outside the 64-bit millisecond range")
    return ms


def origin(ctx: ParseContext, row: int = 0) -> Origin:
    return Origin(ctx.topic, ctx.partition, ctx.offset, row)


def ddl_event(
    source: Source,
    *,
    sql: str,
    vendor_type: str | None,
    order_key: str,
    ts_ms: int | None,
    ingest_ts_ms: int | None,
    ctx: ParseContext,
) -> ChangeEvent:
    """A DDL event; TRUNCATE TABLE becomes op TRUNCATE so sinks can empty the mirror."""
    kind = ddl_kind(sql, vendor_type)
    return ChangeEvent(
        op="TRUNCATE" if kind == "TRUNCATE_TABLE" else "DDL",
        source=source,
        order_key=order_key,
        ts_ms=ts_ms,
        ingest_ts_ms=ingest_ts_ms,
        primary_key=[],
        columns=[],
        before=None,
        after=None,
        changed_columns=None,
        ddl=Ddl(sql, kind),
        origin=origin(ctx),
    )


def blank_to_none(text: str | None) -> str | None:
    return text if text else None
