"""Per-batch statistics of the fresh changelog rows: rows per table and op, and event times.

The metrics that must describe what a micro-batch made *visible* (rows per
source table and op, end-to-end freshness = commit time - event ``ts_ms``, the
newest event time per table) come from the rows the batch appends to the
changelog, not from the query progress (which counts Kafka records, quarantine
and replays included). ``collect`` computes them in one small Spark job on the
batch's ``fresh`` frame (already persisted by the batch) and brings a compact
summary to the driver:

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
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

WIDTHS_MS: Final = ((120_000, 100), (3_600_000, 1_000), (86_400_000, 60_000))
"""(age below, bucket width): events younger than 2 min in 100 ms buckets, below 1 h in 1 s, below a day in 1 min."""
OLD_WIDTH_MS: Final = 3_600_000
"""Bucket width of events older than a day."""

_BUCKET: Final = "_ts_bucket_ms"
_WIDTH: Final = "_ts_width_ms"
_SET: Final = "_grouping"
# grouping_id over (source_table, op, bucket, width): a 1 bit marks an aggregated-away column.
_BY_TABLE_OP: Final = 0b0011
_BY_BUCKET: Final = 0b1100


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


def collect(fresh: DataFrame, *, now_ms: int | None = None) -> BatchStats:
    """Summarize the changelog rows of a batch (columns ``source_table``, ``op``, ``ts_ms``) on the driver."""
    reference = int(time.time() * 1000) if now_ms is None else now_ms
    ts = F.col("ts_ms")
    width = bucket_width(F.lit(reference) - ts)
    frame = fresh.select(
        "source_table",
        "op",
        "ts_ms",
        (ts - F.pmod(ts, width)).alias(_BUCKET),
        F.when(ts.isNotNull(), width).alias(_WIDTH),
    )
    aggregated = frame.groupingSets(
        [["source_table", "op"], [_BUCKET, _WIDTH]], "source_table", "op", _BUCKET, _WIDTH
    ).agg(
        F.grouping_id().alias(_SET),
        F.count(F.lit(1)).alias("rows"),
        F.min("ts_ms").alias("min_ts"),
        F.max("ts_ms").alias("max_ts"),
    )
    stats = BatchStats()
    for row in aggregated.collect():
        if row[_SET] == _BY_TABLE_OP:
            stats.by_table_op[(row["source_table"], row["op"])] = TableOp(row["rows"], row["min_ts"], row["max_ts"])
        elif row[_SET] == _BY_BUCKET:
            if row[_BUCKET] is None:
                stats.without_ts += row["rows"]
            else:
                stats.event_time.append(TimeBucket(row[_BUCKET], row[_WIDTH], row["rows"]))
    stats.event_time.sort(key=lambda b: b.start_ms)
    return stats
