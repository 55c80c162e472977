"""The Spark sink's Prometheus metrics, fed by the query listener (``listener``) and by each micro-batch.

Two feeds, on two kinds of threads of the driver's Python process:

- **the query progress** (``listener.SinkListener.onQueryProgress``). Spark posts a
  ``QueryProgressEvent`` on its listener bus after every micro-batch; pyspark
  delivers it to a Python listener through the py4j callback server as a
  ``StreamingQueryProgress`` (a dict: ``numInputRows``,
  ``inputRowsPerSecond``, ``processedRowsPerSecond``, ``durationMs`` per
  phase, and per source ``startOffset``/``endOffset``/``latestOffset`` as JSON
  strings plus ``metrics``, where the Kafka source reports
  ``minOffsetsBehindLatest``/``avgOffsetsBehindLatest``/``maxOffsetsBehindLatest``).
  Delivery is asynchronous: the event of a batch arrives after the batch ends,
  and ``onQueryTerminated`` arrives after every progress event of the run.
- **the micro-batch** (``SinkMetrics.observe_batch``, called by the job's
  ``foreachBatch`` function once the changelog commit is visible): rows per
  table and op, Kafka records, quarantined rows, end-to-end freshness, newest event time per
  table, all from the batch's ``BatchStats``.

Metric names (docs/spark-sink.md, "Metrics") all start with ``binlake_sink_``.
Freshness is observed once per event, without one Python call per event: the
batch brings a histogram of event times, and ``WeightedHistogram`` (a custom
collector exposing a regular Prometheus histogram) observes each bucket's
freshness ``count`` times in one step.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.metrics_core import HistogramMetricFamily, Metric
from prometheus_client.registry import Collector

from binlake.spark_sink.changelog.batch import BatchReport
from binlake.spark_sink.checkpoint import offset_log
from binlake.spark_sink.mirror.batch import MirrorReport

QUERY_NAME: Final = "binlake-sink"
"""The changelog query's name (``job.start``); the listener ignores other queries of the session."""
MIRROR_QUERY_NAME: Final = "binlake-sink-mirrors"
"""The mirror query's name (``mirrors=follow``); its batches report through ``observe_mirror_batch``."""

FRESHNESS_BUCKETS: Final = (0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300, 900, 3600, 21600, 86400)
BATCH_BUCKETS: Final = (0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120, 300)
LAG_STATS: Final = {"min": "minOffsetsBehindLatest", "avg": "avgOffsetsBehindLatest", "max": "maxOffsetsBehindLatest"}


class WeightedHistogram(Collector):
    """A Prometheus histogram that can observe one value ``count`` times at once (thread-safe).

    prometheus_client's ``Histogram.observe`` takes one observation per call;
    observing every event of a 100k-event batch that way costs a Python call
    each. This collector keeps the same cumulative ``_bucket``/``_sum``/``_count``
    series, so queries (``histogram_quantile``) cannot tell the difference.
    """

    def __init__(
        self, name: str, documentation: str, buckets: Sequence[float], *, registry: CollectorRegistry | None
    ) -> None:
        self.name = name
        self.documentation = documentation
        self._bounds = [*sorted(float(b) for b in buckets), math.inf]
        self._counts = [0] * len(self._bounds)
        self._sum = 0.0
        self._lock = threading.Lock()
        if registry is not None:
            registry.register(self)

    def observe(self, value: float, count: int = 1) -> None:
        if count <= 0:
            return
        index = bisect.bisect_left(self._bounds, value)  # first bound >= value: the "le" bucket
        with self._lock:
            self._counts[index] += count
            self._sum += value * count

    def observe_many(self, values: Iterable[tuple[float, int]]) -> None:
        for value, count in values:
            self.observe(value, count)

    def describe(self) -> Iterable[Metric]:
        return [HistogramMetricFamily(self.name, self.documentation)]

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            counts, total = list(self._counts), self._sum
        cumulative, buckets = 0, []
        for bound, count in zip(self._bounds, counts, strict=True):
            cumulative += count
            buckets.append((_le(bound), float(cumulative)))
        return [HistogramMetricFamily(self.name, self.documentation, buckets=buckets, sum_value=total)]


def _le(bound: float) -> str:
    """A bucket bound as Prometheus writes it ("0.25", "10.0", "+Inf")."""
    return "+Inf" if bound == math.inf else repr(bound)


def kafka_lag(end_offset: str | None, latest_offset: str | None) -> dict[tuple[str, str], int]:
    """Records between the batch's end offsets and the latest offsets, per (topic, partition).

    Both are the Kafka source's offset JSON, ``{"topic": {"0": 42, ...}}``; a
    partition missing from either side is left out (no number is better than a wrong one).
    """
    end = offset_log.kafka_offset_json(end_offset) or {}
    latest = offset_log.kafka_offset_json(latest_offset) or {}
    return {
        (topic, str(partition)): max(0, latest[topic, partition] - offset)
        for (topic, partition), offset in end.items()
        if (topic, partition) in latest
    }


def _finite(value: object) -> float | None:
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


@dataclass
class SinkMetrics:
    """Every ``binlake_sink_*`` metric, on one registry (served by ``spark_sink.observe.server``)."""

    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    _newest_ts_ms: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    _mirror_newest_ts_ms: dict[str, int] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        r = self.registry
        # ---- from the query progress (listener)
        self.input_rate = Gauge(
            "binlake_sink_input_rows_per_second", "Kafka records/s arriving, per the last progress", registry=r
        )
        self.processed_rate = Gauge(
            "binlake_sink_processed_rows_per_second", "Kafka records/s processed, per the last progress", registry=r
        )
        self.batches = Counter("binlake_sink_batches", "Micro-batches completed (progress events)", registry=r)
        self.batch_seconds = Histogram(
            "binlake_sink_batch_duration_seconds",
            "Micro-batch duration (progress durationMs.triggerExecution)",
            buckets=BATCH_BUCKETS,
            registry=r,
        )
        self.phase_seconds = Gauge(
            "binlake_sink_batch_phase_seconds",
            "The last micro-batch's time per phase (progress durationMs: addBatch, latestOffset, walCommit...)",
            ["phase"],
            registry=r,
        )
        self.step_seconds = Counter(
            "binlake_sink_batch_step_seconds",
            "Wall seconds per step of the sink's micro-batch work (schema, fold, merge, changelog_append...),"
            " summed over tables, which run concurrently",
            ["step"],
            registry=r,
        )
        self.kafka_lag = Gauge(
            "binlake_sink_kafka_lag",
            "Records after the last micro-batch's end offset, up to the latest offset seen then",
            ["topic", "partition"],
            registry=r,
        )
        self.offsets_behind = Gauge(
            "binlake_sink_kafka_offsets_behind_latest",
            "The Kafka source's own lag metrics (min/avg/max over partitions) at the last micro-batch",
            ["stat"],
            registry=r,
        )
        self.query_active = Gauge("binlake_sink_query_active", "1 while the sink's streaming query runs", registry=r)
        # ---- from the micro-batch, once its changelog commit is visible
        self.input_rows = Counter(
            "binlake_sink_input_rows", "Kafka records in the changelog query's micro-batches", registry=r
        )
        self.changelog_rows = Counter(
            "binlake_sink_changelog_rows", "Events appended to the changelog", ["table", "op"], registry=r
        )
        self.quarantined = Counter(
            "binlake_sink_quarantined_rows", "Kafka records appended to the quarantine table", registry=r
        )
        self.freshness = WeightedHistogram(
            "binlake_sink_event_freshness_seconds",
            "Per event: changelog commit time minus the event's ts_ms (source commit time)",
            FRESHNESS_BUCKETS,
            registry=r,
        )
        self.without_ts = Counter(
            "binlake_sink_events_without_ts", "Changelog events with no ts_ms (no freshness)", registry=r
        )
        self.last_event = Gauge(
            "binlake_sink_last_event_timestamp_seconds",
            "Newest ts_ms (epoch s) committed to the changelog per table; freshness = time() - this",
            ["table"],
            registry=r,
        )
        self.last_commit = Gauge(
            "binlake_sink_last_commit_timestamp_seconds",
            "Wall time (epoch s) when the last micro-batch's commits became visible",
            registry=r,
        )

        # ---- from the mirror query's micro-batches (mirrors=follow), once their commits are visible
        self.mirror_rows = Counter(
            "binlake_sink_mirror_rows",
            "Changelog events applied to the mirrors, per table and op",
            ["table", "op"],
            registry=r,
        )
        self.mirror_freshness = WeightedHistogram(
            "binlake_sink_mirror_freshness_seconds",
            "Per event: mirror commit time minus the event's ts_ms (mirrors=follow)",
            FRESHNESS_BUCKETS,
            registry=r,
        )
        self.mirror_last_event = Gauge(
            "binlake_sink_mirror_last_event_timestamp_seconds",
            "Newest ts_ms (epoch s) applied to each mirror; mirror freshness = time() - this",
            ["table"],
            registry=r,
        )
        self.mirror_last_commit = Gauge(
            "binlake_sink_mirror_last_commit_timestamp_seconds",
            "Wall time (epoch s) when the last mirror micro-batch's commits became visible",
            registry=r,
        )
        self.older_than_retention = Counter(
            "binlake_sink_changes_older_than_retention",
            "Events applied to the mirrors whose ts_ms was older than the tombstone retention then: such a change "
            "of a key deleted longer ago than that applies as if the key had never been deleted",
            registry=r,
        )
        self.tombstones_expired = Counter(
            "binlake_sink_tombstones_expired",
            "Tombstones (deleted keys) dropped as older than BINLAKE_SINK_TOMBSTONE_RETENTION_HOURS",
            registry=r,
        )
        self.mirror_deferred_rows = Gauge(
            "binlake_sink_mirror_deferred_rows",
            "Row events the mirror query left in the changelog for a later MERGE (BINLAKE_SINK_MIRROR_DEFER_ROWS)",
            registry=r,
        )
        self.mirror_deferred_tables = Gauge(
            "binlake_sink_mirror_deferred_tables",
            "Tables whose mirror has changes deferred to a later MERGE (BINLAKE_SINK_MIRROR_DEFER_ROWS)",
            registry=r,
        )
        self.mirror_batch_seconds = Histogram(
            "binlake_sink_mirror_batch_duration_seconds",
            "Mirror micro-batch duration (mirrors=follow)",
            buckets=BATCH_BUCKETS,
            registry=r,
        )

    def observe_mirror_batch(self, report: MirrorReport) -> None:
        """A mirror micro-batch whose commits are visible (``report.visible_at_s`` set by the job)."""
        visible_at = report.visible_at_s if report.visible_at_s is not None else time.time()
        stats = report.stats
        for (table, op), entry in stats.by_table_op.items():
            self.mirror_rows.labels(table, op).inc(entry.rows)
        for table, ts_ms in stats.newest_ts_ms().items():
            if ts_ms > self._mirror_newest_ts_ms.get(table, -(2**63)):
                self._mirror_newest_ts_ms[table] = ts_ms
                self.mirror_last_event.labels(table).set(ts_ms / 1000)
        self.mirror_freshness.observe_many(stats.freshness(visible_at))
        self.mirror_last_commit.set(visible_at)
        if report.started_at_s:
            self.mirror_batch_seconds.observe(max(0.0, visible_at - report.started_at_s))
        for name, seconds in report.steps.seconds.items():
            self.step_seconds.labels(name).inc(seconds)
        self.older_than_retention.inc(report.older_than_retention)
        self.tombstones_expired.inc(report.tombstones_expired)
        self.mirror_deferred_rows.set(report.deferred_rows)
        self.mirror_deferred_tables.set(report.deferred_tables)

    def observe_mirror_tails(self, report: MirrorReport) -> None:
        """A MERGE of the deferred tails between batches (``mirror.batch.flush``): none left deferred."""
        for name, seconds in report.steps.seconds.items():
            self.step_seconds.labels(name).inc(seconds)
        self.tombstones_expired.inc(report.tombstones_expired)
        self.mirror_deferred_rows.set(0)
        self.mirror_deferred_tables.set(0)

    def observe_batch(self, report: BatchReport) -> None:
        """A micro-batch whose commits are visible (``report.visible_at_s`` set by the job)."""
        visible_at = report.visible_at_s if report.visible_at_s is not None else time.time()
        stats = report.stats
        for (table, op), entry in stats.by_table_op.items():
            self.changelog_rows.labels(table, op).inc(entry.rows)
        for table, ts_ms in stats.newest_ts_ms().items():
            # A late batch of old events must not move a table's newest time backwards.
            if ts_ms > self._newest_ts_ms.get(table, -(2**63)):
                self._newest_ts_ms[table] = ts_ms
                self.last_event.labels(table).set(ts_ms / 1000)
        self.freshness.observe_many(stats.freshness(visible_at))
        if stats.without_ts:
            self.without_ts.inc(stats.without_ts)
        if report.records:
            self.input_rows.inc(report.records)
        if report.quarantined:
            self.quarantined.inc(report.quarantined)
        self.last_commit.set(visible_at)
        for name, seconds in report.steps.seconds.items():
            self.step_seconds.labels(name).inc(seconds)
        self.older_than_retention.inc(report.older_than_retention)  # mirrors=inline
        self.tombstones_expired.inc(report.tombstones_expired)

    def observe_progress(self, progress: Mapping[str, Any]) -> None:
        """One ``StreamingQueryProgress`` (or its JSON as a dict)."""
        self.batches.inc()
        for gauge, key in ((self.input_rate, "inputRowsPerSecond"), (self.processed_rate, "processedRowsPerSecond")):
            value = _finite(progress.get(key))
            if value is not None:
                gauge.set(value)
        durations: Mapping[str, Any] = progress.get("durationMs") or {}
        for phase, ms in durations.items():
            if isinstance(ms, int | float):
                self.phase_seconds.labels(phase).set(ms / 1000)
        total = durations.get("triggerExecution")
        if isinstance(total, int | float):
            self.batch_seconds.observe(total / 1000)
        for source in progress.get("sources") or []:
            for (topic, partition), lag in kafka_lag(source.get("endOffset"), source.get("latestOffset")).items():
                self.kafka_lag.labels(topic, partition).set(lag)
            source_metrics: Mapping[str, Any] = source.get("metrics") or {}
            for stat, key in LAG_STATS.items():
                value = _finite(_number(source_metrics.get(key)))
                if value is not None:
                    self.offsets_behind.labels(stat).set(value)


def _number(value: object) -> float | None:
    """The Kafka source reports its metrics as strings ("12.5")."""
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None
