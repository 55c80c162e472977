"""``binlake lake show [TABLE]``: what the lake holds, how big and how fresh.

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

Everything is gathered into plain dataclasses first (``listing``, ``detail``),
then rendered as text or JSON, so tests read the numbers directly.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from shared.event.model import OPS, ROW_OPS
from spark_sink import delta_tables, lake_tables
from spark_sink.history import IS_CURRENT
from spark_sink.lake_tables import LakeError, TableInfo
from spark_sink.lake_text import duration, grid, to_json
from spark_sink.mirror import PROP_TRUNCATED
from spark_sink.mirror_plan import HIDDEN
from spark_sink.settings import SinkSettings


@dataclass(slots=True)
class SourceStats:
    """One source table's events in the changelog."""

    source_table: str
    events: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    last_ts_ms: int | None = None
    last_order_key: str | None = None
    """The newest ``order_key`` of its row events (INSERT, UPDATE, DELETE, SNAPSHOT, UPSERT)."""


@dataclass(slots=True)
class ListedTable:
    name: str
    kind: str
    uri: str
    version: int
    rows: int
    last_commit: datetime | None
    freshness_s: float | None


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
    truncated_at: str | None
    tombstones: TableInfo | None
    history: TableInfo | None
    history_current: int | None
    changelog: SourceStats | None
    freshness_s: float | None


# ---------------------------------------------------------------- gathering


def changelog_stats(spark: SparkSession, settings: SinkSettings, table: str | None = None) -> dict[str, SourceStats]:
    """Per source table: events, events per op, newest ``ts_ms`` and row-event ``order_key`` (one Spark job)."""
    uri = settings.changelog_uri()
    if not delta_tables.exists(spark, uri):
        return {}
    frame = spark.read.format("delta").load(uri)
    if table is not None:
        frame = frame.where(F.col("source_table") == table)  # a partition column: pruned
    grouped = frame.groupBy("source_table", "op").agg(
        F.count(F.lit(1)).alias("n"), F.max("ts_ms").alias("ts"), F.max("order_key").alias("ok")
    )
    out: dict[str, SourceStats] = {}
    for row in grouped.collect():
        stats = out.setdefault(row["source_table"], SourceStats(row["source_table"]))
        stats.events += int(row["n"])
        stats.ops[row["op"]] = int(row["n"])
        stats.last_ts_ms = _newest(stats.last_ts_ms, row["ts"])
        if row["op"] in ROW_OPS:
            stats.last_order_key = _newest(stats.last_order_key, row["ok"])
    for stats in out.values():
        stats.ops = {op: stats.ops[op] for op in OPS if op in stats.ops}
    return dict(sorted(out.items()))


_T = TypeVar("_T", int, str)


def _newest(a: _T | None, b: _T | None) -> _T | None:
    return b if a is None else a if b is None else max(a, b)


def _freshness(now: datetime, ts_ms: int | None) -> float | None:
    return None if ts_ms is None else now.timestamp() - ts_ms / 1000


def listing(spark: SparkSession, settings: SinkSettings, *, now: datetime | None = None) -> Listing:
    if not lake_tables.lake_exists(spark, settings):
        raise LakeError(f"no lake at {settings.lake()}: check --lake (BINLAKE_SINK_LAKE_URI)")
    now = now or datetime.fromtimestamp(time.time(), UTC)
    sources = changelog_stats(spark, settings)
    fresh = {name: _freshness(now, s.last_ts_ms) for name, s in sources.items()}
    all_ts = [s.last_ts_ms for s in sources.values() if s.last_ts_ms is not None]
    tables: list[ListedTable] = []

    def add(info: TableInfo | None, freshness: float | None) -> None:
        if info is not None:
            tables.append(
                ListedTable(info.name, info.kind, info.uri, info.version, info.rows, info.last_commit, freshness)
            )

    add(
        lake_tables.table_info(spark, "changelog", "changelog", settings.changelog_uri()),
        _freshness(now, max(all_ts)) if all_ts else None,
    )
    # The quarantine holds undecodable messages: they have no event time.
    add(lake_tables.table_info(spark, "quarantine", "quarantine", settings.quarantine_uri()), None)
    for entry in lake_tables.source_tables(spark, settings):
        for kind in ("mirror", "tombstones", "history"):
            uri = entry.uri(kind)
            if uri is not None:
                add(lake_tables.table_info(spark, entry.source_table, kind, uri), fresh.get(entry.source_table))
    return Listing(settings.lake(), now, tables, list(sources.values()), fresh)


def detail(spark: SparkSession, settings: SinkSettings, table: str, *, now: datetime | None = None) -> Detail:
    now = now or datetime.fromtimestamp(time.time(), UTC)
    entry = lake_tables.find_source_table(spark, settings, table)
    name = entry.source_table if entry is not None else table
    stats = changelog_stats(spark, settings, name).get(name)
    if entry is None and stats is None:
        raise LakeError(
            f"{table} is neither a mirror nor a source table of the changelog under {settings.lake()}: "
            "`binlake lake show` lists the tables"
        )
    mirror = tombstones = history = None
    history_current: int | None = None
    if entry is not None:
        if entry.mirror is not None:
            mirror = lake_tables.table_info(spark, name, "mirror", entry.mirror)
        if entry.tombstones is not None:
            tombstones = lake_tables.table_info(spark, name, "tombstones", entry.tombstones)
        if entry.history is not None:
            history = lake_tables.table_info(spark, name, "history", entry.history)
            frame = spark.read.format("delta").load(entry.history)
            if IS_CURRENT in frame.columns:
                history_current = frame.where(F.col(IS_CURRENT)).count()
    props = mirror.properties if mirror is not None else {}
    key = lake_tables.primary_key(props)
    fallbacks = lake_tables.fallbacks(props)
    columns: list[ColumnInfo] = []
    if mirror is not None:
        for f in lake_tables.schema(spark, mirror.uri).fields:
            role = "key" if f.name in key else "hidden" if f.name in HIDDEN else ""
            if f.name in fallbacks:
                role = f"fallback of {fallbacks[f.name]}"
            columns.append(ColumnInfo(f.name, f.dataType.simpleString(), role))
    last = lake_tables.max_order_key(spark, mirror.uri if mirror else None)
    return Detail(
        source_table=name,
        now=now,
        mirror=mirror,
        key=key,
        fallbacks=fallbacks,
        columns=columns,
        last_order_key=last,
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
        "tables": [asdict(t) for t in result.tables],
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
            f"  last order_key applied: {_text(result.last_order_key)}",
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
