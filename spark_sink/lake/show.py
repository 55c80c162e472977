"""``binlake lake show [TABLE]``: what the lake holds, how big and how fresh, read without Spark.

Without TABLE: one line per Delta table (changelog, quarantine, and each source
table's mirror, tombstones and history), with its Delta version, row count,
last commit time and **freshness** = now - the newest event time (``ts_ms``,
the source's clock) of its source table in the changelog (the changelog's own
line: of all its events); then one line per source table of the changelog
(events, newest ``order_key`` of its row events, freshness).

With TABLE (a source table name, ``shop.t00``): that table's mirror in
detail (schema, key, fallback columns, row count, the newest
``_binlake_order_key`` it applied, the last TRUNCATE applied) and its
changelog events per op.

Everything is read natively (``spark_sink.lake.native``: the Delta logs with
delta-rs, data with DuckDB), gathered into plain dataclasses first
(``listing``, ``detail``), then rendered as text or JSON, so tests read the
numbers directly.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from binlake.spark_sink.lake.entries import TableInfo, fallbacks, primary_key
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.lake.native import LakeReader, SourceStats
from binlake.spark_sink.lake.text import duration, grid, to_json
from binlake.spark_sink.layout import HIDDEN, PROP_TRUNCATED

__all__ = ["Detail", "Listing", "SourceStats", "detail", "listing", "render"]


@dataclass(frozen=True, slots=True)
class ListedTable(TableInfo):
    freshness_s: float | None = None
    """Since the newest event the table holds (the changelog's); None where tables hold no event time."""


@dataclass(slots=True)
class Listing:
    lake: str
    now: datetime
    tables: list[ListedTable]
    sources: list[SourceStats]
    source_freshness_s: dict[str, float | None]


@dataclass(slots=True)
class ColumnInfo:
    name: str
    type: str
    role: str
    """``key``, ``hidden``, ``fallback of <column>`` or empty."""


@dataclass(slots=True)
class Detail:
    source_table: str
    now: datetime
    mirror: TableInfo | None
    key: list[str]
    fallbacks: dict[str, str]
    columns: list[ColumnInfo]
    last_order_key: str | None
    """The newest ``_binlake_order_key`` of the mirror: the sequence (``order_key#origin``) it applied last."""
    truncated_at: str | None
    tombstones: TableInfo | None
    history: TableInfo | None
    history_current: int | None
    changelog: SourceStats | None
    freshness_s: float | None


# ---------------------------------------------------------------- gathering


def _freshness(now: datetime, ts_ms: int | None) -> float | None:
    return None if ts_ms is None else now.timestamp() - ts_ms / 1000


def listing(lake: LakeReader, *, now: datetime | None = None) -> Listing:
    if not lake.exists():
        raise LakeError(f"no lake at {lake.settings.lake()}: check --lake (BINLAKE_SINK_LAKE_URI)")
    now = now or datetime.fromtimestamp(time.time(), UTC)
    sources = lake.changelog_stats()
    fresh = {name: _freshness(now, s.last_ts_ms) for name, s in sources.items()}
    all_ts = [s.last_ts_ms for s in sources.values() if s.last_ts_ms is not None]
    tables: list[ListedTable] = []

    def add(info: TableInfo | None, freshness: float | None) -> None:
        if info is not None:
            tables.append(
                ListedTable(
                    info.name, info.kind, info.uri, info.version, info.rows, info.last_commit, freshness_s=freshness
                )
            )

    add(lake.info("changelog", "changelog", lake.changelog()), _freshness(now, max(all_ts)) if all_ts else None)
    # The quarantine holds undecodable messages: they have no event time.
    add(lake.info("quarantine", "quarantine", lake.quarantine()), None)
    # Every mirror's deleted keys, in one table (source tables of earlier releases have one each, below).
    add(lake.info("tombstones", "tombstones", lake.deleted_keys()), None)
    for entry in lake.source_tables():
        for kind in ("mirror", "tombstones", "history"):
            uri = entry.uri(kind)
            if uri is not None:
                add(lake.info(entry.source_table, kind, uri), fresh.get(entry.source_table))
    return Listing(lake.settings.lake(), now, tables, list(sources.values()), fresh)


def detail(lake: LakeReader, table: str, *, now: datetime | None = None) -> Detail:
    now = now or datetime.fromtimestamp(time.time(), UTC)
    entry = lake.find_source_table(table)
    name = entry.source_table if entry is not None else table
    stats = lake.changelog_stats(name).get(name)
    if entry is None and stats is None:
        raise LakeError(
            f"{table} is neither a mirror nor a source table of the changelog under {lake.settings.lake()}: "
            "`binlake lake show` lists the tables"
        )
    mirror = tombstones = history = None
    history_current: int | None = None
    if entry is not None:
        if entry.mirror is not None:
            mirror = lake.info(name, "mirror", entry.mirror)
        if entry.tombstones is not None:
            tombstones = lake.info(name, "tombstones", entry.tombstones)
        if entry.history is not None:
            history = lake.info(name, "history", entry.history)
            history_current = lake.history_current(entry.history)
    if tombstones is None:
        shared = lake.info(name, "tombstones", lake.deleted_keys())
        if shared is not None:  # the lake's tombstone table: this table's rows of it
            tombstones = dataclasses.replace(shared, rows=lake.deleted_keys_of(name))
    props = mirror.properties if mirror is not None else {}
    key = primary_key(props)
    fallback = fallbacks(props)
    columns: list[ColumnInfo] = []
    if mirror is not None:
        for column, type_text in lake.schema(mirror.uri):
            role = "key" if column in key else "hidden" if column in HIDDEN else ""
            if column in fallback:
                role = f"fallback of {fallback[column]}"
            columns.append(ColumnInfo(column, type_text, role))
    return Detail(
        source_table=name,
        now=now,
        mirror=mirror,
        key=key,
        fallbacks=fallback,
        columns=columns,
        last_order_key=lake.max_order_key(mirror.uri if mirror else None),
        truncated_at=props.get(PROP_TRUNCATED),
        tombstones=tombstones,
        history=history,
        history_current=history_current,
        changelog=stats,
        freshness_s=_freshness(now, stats.last_ts_ms if stats else None),
    )


# ---------------------------------------------------------------- rendering


def listing_text(result: Listing) -> str:
    rows = [[t.name, t.kind, t.version, t.rows, t.last_commit, duration(t.freshness_s)] for t in result.tables]
    parts = [
        f"lake {result.lake} at {result.now:%Y-%m-%d %H:%M:%S}Z",
        "",
        grid(["TABLE", "KIND", "VERSION", "ROWS", "LAST COMMIT", "FRESHNESS"], rows),
    ]
    if result.sources:
        fresh = result.source_freshness_s
        events = [
            [s.source_table, s.events, s.last_order_key, _ms_time(s.last_ts_ms), duration(fresh[s.source_table])]
            for s in result.sources
        ]
        parts += ["", grid(["SOURCE TABLE", "EVENTS", "LAST ORDER_KEY", "LAST EVENT", "FRESHNESS"], events)]
    return "\n".join(parts)


def _ms_time(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)


def listing_json(result: Listing) -> dict[str, Any]:
    return {
        "lake": result.lake,
        "now": result.now,
        "tables": [{k: v for k, v in asdict(t).items() if k != "properties"} for t in result.tables],
        "source_tables": [
            {**asdict(s), "freshness_s": result.source_freshness_s[s.source_table]} for s in result.sources
        ],
    }


def detail_text(result: Detail) -> str:
    lines = [f"source table {result.source_table}"]
    mirror = result.mirror
    if mirror is None:
        lines.append("mirror: none (no row events applied yet)")
    else:
        lines += [
            f"mirror: {mirror.uri}",
            f"  delta version {mirror.version}, last commit {_text(mirror.last_commit)}",
            f"  rows: {mirror.rows}",
            f"  key: {', '.join(result.key) if result.key else 'none (append-only: every row event is a row)'}",
            f"  fallbacks: {', '.join(f'{p} <- {c}' for p, c in result.fallbacks.items()) or 'none'}",
            f"  last applied (_binlake_order_key): {_text(result.last_order_key)}",
        ]
        if result.truncated_at is not None:
            lines.append(f"  last TRUNCATE applied: {result.truncated_at}")
    for info, label in ((result.tombstones, "tombstones"), (result.history, "history")):
        if info is not None:
            extra = (
                f", {result.history_current} current"
                if label == "history" and result.history_current is not None
                else ""
            )
            lines.append(f"{label}: {info.rows} rows{extra}, delta version {info.version} ({info.uri})")
    stats = result.changelog
    if stats is None:
        lines.append("changelog: no events")
    else:
        lines += [
            f"changelog: {stats.events} events, last row-event order_key {_text(stats.last_order_key)}",
            f"  last event {_text(_ms_time(stats.last_ts_ms))}, freshness {_text(duration(result.freshness_s))}",
            *(f"  {op:<9} {count}" for op, count in stats.ops.items()),
        ]
    if result.columns:
        lines += ["", grid(["COLUMN", "TYPE", "ROLE"], [[c.name, c.type, c.role] for c in result.columns])]
    return "\n".join(lines)


def _text(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S}Z"
    return str(value)


def detail_json(result: Detail) -> dict[str, Any]:
    return asdict(result)


def render(result: Listing | Detail, *, as_json: bool) -> str:
    if isinstance(result, Listing):
        return to_json(listing_json(result)) if as_json else listing_text(result)
    return to_json(detail_json(result)) if as_json else detail_text(result)
