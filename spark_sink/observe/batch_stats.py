"""Per-batch statistics of the fresh changelog rows: rows per table and op, and event times.

The metrics that must describe what a micro-batch made *visible* (rows per
source table and op, end-to-end freshness = commit time - event ``ts_ms``, the
newest event time per table) come from the rows the batch appends to the
changelog, not from the query progress (which counts Kafka records, quarantine
and replays included). ``collect`` computes them in one small Spark job (the
mirror batch over its changelog rows; the changelog batch over the files its
commit added, where they are not on this machine) and brings a compact
summary to the driver; ``collect_local`` computes the same with DuckDB in the
driver, from the files a changelog commit added to a local lake (about 0.1 s
where a Spark job over them takes about 1 s):

- one row per (source_table, op): the row count and the min/max ``ts_ms``;
- an event-time histogram: counts per bucket of ``ts_ms``. Buckets are 100 ms
  wide for events younger than two minutes when the batch runs, then 1 s,
  1 min and 1 h as events get older, so a live stream is measured to +-50 ms
  while a backlog of days still collects a few thousand buckets at most.

Both are grouping sets of a single aggregation (one shuffle, no
tables x buckets product). The freshness of a bucket's events is taken at the
bucket's midpoint; the histogram observes it once per event (``count`` times).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from pyspark.sql import Column, DataFrame, Row
from pyspark.sql import functions as F

WIDTHS_MS: Final = ((120_000, 100), (3_600_000, 1_000), (86_400_000, 60_000))
"""(age below, bucket width): events younger than 2 min in 100 ms buckets, below 1 h in 1 s, below a day in 1 min."""
OLD_WIDTH_MS: Final = 3_600_000
"""Bucket width of events older than a day."""

_BUCKET: Final = "_ts_bucket_ms"
_WIDTH: Final = "_ts_width_ms"
_BY_TABLE: Final = "_g_table"
"""grouping(source_table): 0 in the (source_table, op) set's rows."""
_BY_TIME: Final = "_g_time"
"""grouping(bucket): 0 in the event-time set's rows."""
ROWS: Final = "_rows"
"""The row count of an aggregation's result row (``aggregates``)."""
_MIN_TS: Final = "_min_ts"
_MAX_TS: Final = "_max_ts"


@dataclass(frozen=True, slots=True)
class TimeBucket:
    """``count`` events with ``start_ms <= ts_ms < start_ms + width_ms``."""

    start_ms: int
    width_ms: int
    count: int

    @property
    def mid_ms(self) -> float:
        return self.start_ms + self.width_ms / 2


@dataclass(frozen=True, slots=True)
class TableOp:
    """Rows of one (source_table, op) in the batch, with their oldest and newest ``ts_ms`` (None: no ts)."""

    rows: int
    min_ts_ms: int | None
    max_ts_ms: int | None


@dataclass(slots=True)
class BatchStats:
    """What one micro-batch appends to the changelog, summarized on the driver."""

    by_table_op: dict[tuple[str, str], TableOp] = field(default_factory=dict)
    event_time: list[TimeBucket] = field(default_factory=list)
    without_ts: int = 0
    """Rows whose event has no ``ts_ms`` (some vendors omit it): no freshness for them."""

    @property
    def rows(self) -> int:
        return sum(entry.rows for entry in self.by_table_op.values())

    def newest_ts_ms(self) -> dict[str, int]:
        """The newest ``ts_ms`` per source table (tables whose rows all lack one are left out)."""
        out: dict[str, int] = {}
        for (table, _op), entry in self.by_table_op.items():
            if entry.max_ts_ms is None:
                continue
            current = out.get(table)
            if current is None or entry.max_ts_ms > current:
                out[table] = entry.max_ts_ms
        return out

    def older_than(self, cutoff_ms: float) -> int:
        """Events whose ``ts_ms`` is before ``cutoff_ms``, to the histogram's bucket width (whole buckets that
        end by then: an event up to a bucket's width older may be left out)."""
        return sum(b.count for b in self.event_time if b.start_ms + b.width_ms <= cutoff_ms)

    def oldest_ts_ms(self) -> int | None:
        values = [entry.min_ts_ms for entry in self.by_table_op.values() if entry.min_ts_ms is not None]
        return min(values) if values else None

    def freshness(self, visible_at_s: float) -> Iterator[tuple[float, int]]:
        """(seconds from event time to ``visible_at_s``, events) per bucket, at the bucket's midpoint.

        Clamped at 0: with the source and the sink on one clock an event cannot be
        younger than 0; a negative age is clock skew between the source and the sink.
        """
        visible_ms = visible_at_s * 1000
        for bucket in self.event_time:
            yield max(0.0, (visible_ms - bucket.mid_ms) / 1000), bucket.count


def bucket_width(age: Column) -> Column:
    """The bucket width (ms) for events of ``age`` ms at the time the batch runs (see ``WIDTHS_MS``)."""
    width: Column | None = None
    for below, ms in WIDTHS_MS:
        width = F.when(age < below, F.lit(ms)) if width is None else width.when(age < below, F.lit(ms))
    assert width is not None
    return width.otherwise(F.lit(OLD_WIDTH_MS))


def bucketed(rows: DataFrame, *columns: str | Column, now_ms: int | None = None) -> DataFrame:
    """``columns`` of ``rows`` and the event-time bucket (start, width) of each row's ``ts_ms``."""
    reference = int(time.time() * 1000) if now_ms is None else now_ms
    ts = F.col("ts_ms")
    width = bucket_width(F.lit(reference) - ts)
    return rows.select(*columns, (ts - F.pmod(ts, width)).alias(_BUCKET), F.when(ts.isNotNull(), width).alias(_WIDTH))


GROUPING_SETS: Final = (("source_table", "op"), (_BUCKET, _WIDTH))
"""The statistics' grouping sets over a ``bucketed`` frame."""


def aggregates() -> list[Column]:
    """The statistics' aggregates, and which set a result row belongs to."""
    ts = F.col("ts_ms")
    return [
        F.grouping("source_table").alias(_BY_TABLE),
        F.grouping(_BUCKET).alias(_BY_TIME),
        F.count(F.lit(1)).alias(ROWS),
        F.min(ts).alias(_MIN_TS),
        F.max(ts).alias(_MAX_TS),
    ]


def summarize(rows: Iterable[Row]) -> BatchStats:
    """The ``BatchStats`` of an aggregation's result rows (``GROUPING_SETS`` x ``aggregates``)."""
    stats = BatchStats()
    for row in rows:
        if row[_BY_TABLE] == 0:
            stats.by_table_op[(row["source_table"], row["op"])] = TableOp(row[ROWS], row[_MIN_TS], row[_MAX_TS])
        elif row[_BY_TIME] == 0:
            if row[_BUCKET] is None:
                stats.without_ts += row[ROWS]
            else:
                stats.event_time.append(TimeBucket(row[_BUCKET], row[_WIDTH], row[ROWS]))
    stats.event_time.sort(key=lambda b: b.start_ms)
    return stats


def collect(fresh: DataFrame, *, now_ms: int | None = None) -> BatchStats:
    """Summarize the changelog rows of a batch (columns ``source_table``, ``op``, ``ts_ms``) on the driver."""
    frame = bucketed(fresh, "source_table", "op", "ts_ms", now_ms=now_ms)
    sets = [list(s) for s in GROUPING_SETS]
    aggregated = frame.groupingSets(sets, *dict.fromkeys(c for s in sets for c in s)).agg(*aggregates())
    return summarize(aggregated.collect())


def _width_sql(reference_ms: int) -> str:
    """``bucket_width`` in SQL, of column ``ts_ms`` (NULL for a row without one)."""
    cases = " ".join(f"WHEN {reference_ms} - ts_ms < {below} THEN {ms}" for below, ms in WIDTHS_MS)
    return f"CASE WHEN ts_ms IS NULL THEN NULL {cases} ELSE {OLD_WIDTH_MS} END"


def collect_local(files: Sequence[tuple[Path, str | None]], *, now_ms: int | None = None) -> BatchStats | None:
    """``collect`` of the changelog rows in local Parquet ``files`` (path, the file's ``source_table``
    partition value: None when the table is not a partition column and the file holds it), with DuckDB;
    None if DuckDB cannot read them as such (a table whose columns were renamed by column mapping)."""
    import duckdb  # a dependency of the lake tools anyway; imported once, on the first batch

    stats = BatchStats()
    if not files:
        return stats
    reference = int(time.time() * 1000) if now_ms is None else now_ms
    in_files = any(table is None for _, table in files)
    con: Any = duckdb.connect()
    try:
        paths = [str(path) for path, _ in files]
        con.execute(
            "CREATE TEMP TABLE batch_rows AS SELECT filename, "
            + ("source_table, " if in_files else "")
            + f"op, ts_ms, {_width_sql(reference)} AS w FROM read_parquet($paths, filename = true)",
            {"paths": paths},
        )
        if in_files:
            by_table = "SELECT source_table, op, count(*), min(ts_ms), max(ts_ms) FROM batch_rows GROUP BY ALL"
            found = con.execute(by_table).fetchall()
        else:
            table_of = {str(path): table for path, table in files}
            per_file = "SELECT filename, op, count(*), min(ts_ms), max(ts_ms) FROM batch_rows GROUP BY ALL"
            found = [(table_of[name], *rest) for name, *rest in con.execute(per_file).fetchall()]
        for table, op, rows, low, high in found:
            entry = stats.by_table_op.get((table, op))
            if entry is not None:  # one table's files (one per event date): combine
                rows += entry.rows
                low = _combine(low, entry.min_ts_ms, min)
                high = _combine(high, entry.max_ts_ms, max)
            stats.by_table_op[(table, op)] = TableOp(rows, low, high)
        # pmod, as Spark's: a bucket starts at or below its times, before 1970 too.
        buckets = "SELECT ts_ms - ((ts_ms % w) + w) % w, w, count(*) FROM batch_rows GROUP BY ALL"
        for start, width, count in con.execute(buckets).fetchall():
            if start is None:
                stats.without_ts += count
            else:
                stats.event_time.append(TimeBucket(start, width, count))
    except duckdb.Error:
        return None
    finally:
        con.close()
    stats.event_time.sort(key=lambda b: b.start_ms)
    return stats


def _combine(a: int | None, b: int | None, pick: Any) -> int | None:
    return b if a is None else a if b is None else int(pick(a, b))
