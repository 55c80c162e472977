"""Canonical events the changelog tests share: a DDL event with envelope fields a workload event lacks."""

from __future__ import annotations

from binlake.shared.event.model import ChangeEvent, Columns, Ddl, Origin, Source


def ddl_event(source: Source, ts_ms: int | None) -> ChangeEvent:
    """An ALTER TABLE of ``source`` at ``ts_ms`` (None: no event time): a ``ddl`` record, no images, no key."""
    return ChangeEvent(
        op="DDL",
        source=source,
        order_key="00000000000000000009.00000000000000000001.000000",
        ts_ms=ts_ms,
        ingest_ts_ms=None,
        primary_key=[],
        columns=Columns([]),
        before=None,
        after=None,
        changed_columns=None,
        ddl=Ddl("ALTER TABLE t ADD COLUMN c INT", "ALTER"),
        origin=Origin("vendor", 3, 41, 0),
    )
