"""The normalizer's Prometheus metrics (names documented in docs/operations.md).

Labels whose values come from message content (table names, control kinds) are
capped per metric: past ``BINLAKE_METRICS_MAX_LABEL_VALUES`` distinct values, new
ones are counted under ``__other__``, so input naming a new table in every
message cannot grow the registry (and every scrape) without bound.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

OVERFLOW: Final = "__other__"
"""The label value of everything past a capped label's first values."""


class CappedLabel:
    """The values one label of one metric takes: the first ``limit`` distinct ones, then ``OVERFLOW``."""

    __slots__ = ("_limit", "_seen")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen: set[str] = set()

    def __call__(self, value: str) -> str:
        if value in self._seen:
            return value
        if len(self._seen) < self._limit:
            self._seen.add(value)
            return value
        return OVERFLOW


PartitionWaits = Callable[[], dict[tuple[str, int], float]]
"""Seconds each input partition has waited for a committed batch, by (topic, partition)."""


@dataclass
class NormalizerMetrics:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    max_label_values: int = 1000
    """Distinct values a label taken from message content has per metric (BINLAKE_METRICS_MAX_LABEL_VALUES)."""

    def __post_init__(self) -> None:
        self.cap_labels(self.max_label_values)
        r = self.registry
        self.consumed = Counter("binlake_consumed_messages", "Vendor messages consumed", ["topic"], registry=r)
        self.produced = Counter(
            "binlake_produced_events", "Canonical events produced (committed or not)", ["topic"], registry=r
        )
        self.dead_lettered = Counter(
            "binlake_dead_letters", "Vendor messages sent to the dead-letter topic", ["topic", "reason"], registry=r
        )
        self.controls = Counter(
            "binlake_control_messages", "Accepted messages with no event (heartbeats, tx markers)", ["kind"], registry=r
        )
        self.filtered = Counter(
            "binlake_filtered_events", "Events skipped by the include/exclude table rules", ["table"], registry=r
        )
        self.events = Counter("binlake_events", "Canonical events by table and op", ["table", "op"], registry=r)
        self.batch_seconds = Histogram(
            "binlake_batch_seconds",
            "Time to parse, produce and commit one partition batch",
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=r,
        )
        self.batch_size = Histogram(
            "binlake_batch_messages",
            "Input messages per committed transaction",
            buckets=(1, 10, 50, 100, 500, 1000, 2000, 5000),
            registry=r,
        )
        self.transactions = Counter("binlake_transactions_committed", "Transactions committed", registry=r)
        self.aborts = Counter("binlake_transaction_aborts", "Transactions aborted", ["cause"], registry=r)
        self.lag = Gauge(
            "binlake_consumer_lag", "Messages behind the high watermark", ["topic", "partition"], registry=r
        )
        self.source_last_seen = Gauge(
            "binlake_source_last_seen_seconds",
            "Source time (epoch s) of the newest change or heartbeat per table; freshness = time() - this",
            ["table"],
            registry=r,
        )
        self.assigned = Gauge("binlake_assigned_partitions", "Input partitions owned", registry=r)
        self.broker_errors = Counter(
            "binlake_broker_errors", "Kafka errors that made the service back off", ["error"], registry=r
        )
        self.stalls = _StallCollector()
        r.register(self.stalls)
        self.broker_wait = Gauge(
            "binlake_broker_wait_seconds",
            "How long the consume loop has waited on the brokers without progress (a send, an offset commit, a "
            "transaction or coordinator call, a back-off after a broker error); 0: not waiting. Computed when scraped",
            registry=r,
        )
        self.rejoins = Counter(
            "binlake_group_rejoins",
            "Times the service left the consumer group to join again (cause: assignment_failed, ownership_unconfirmed)",
            ["cause"],
            registry=r,
        )

    def cap_labels(self, limit: int) -> None:
        """Cap each content-derived label at ``limit`` distinct values (before any is used)."""
        self.max_label_values = limit
        self.event_tables = CappedLabel(limit)
        self.filtered_tables = CappedLabel(limit)
        self.seen_tables = CappedLabel(limit)
        self.control_kinds = CappedLabel(limit)
        self._other_seen = float("-inf")

    def source_seen(self, table: str, seconds: float) -> None:
        """Set ``binlake_source_last_seen_seconds``; ``__other__`` keeps the newest time of the tables it holds."""
        label = self.seen_tables(table)
        if label == OVERFLOW:
            if seconds <= self._other_seen:
                return
            self._other_seen = seconds
        self.source_last_seen.labels(label).set(seconds)


class _StallCollector(Collector):
    """``binlake_partition_stalled_seconds`` and ``binlake_partition_stalled``, computed when scraped.

    Computed at scrape time from the progress clocks, so a loop stuck inside a batch still
    shows its partition's wait growing.
    """

    def __init__(self) -> None:
        self.waits: PartitionWaits = dict
        self.owned: Callable[[], list[tuple[str, int]]] = list
        self.stall_after_s = float("inf")

    def watch(self, waits: PartitionWaits, owned: Callable[[], list[tuple[str, int]]], stall_after_s: float) -> None:
        self.waits, self.owned, self.stall_after_s = waits, owned, stall_after_s

    def describe(self) -> Iterator[Metric]:
        yield from self._families()

    def collect(self) -> Iterator[Metric]:
        seconds, stalled = self._families()
        waits = self.waits()
        for topic, partition in sorted(set(self.owned()) | set(waits)):
            waited = waits.get((topic, partition), 0.0)
            labels = [topic, str(partition)]
            seconds.add_metric(labels, waited)
            stalled.add_metric(labels, 1.0 if waited > self.stall_after_s else 0.0)
        yield seconds
        yield stalled

    @staticmethod
    def _families() -> tuple[GaugeMetricFamily, GaugeMetricFamily]:
        return (
            GaugeMetricFamily(
                "binlake_partition_stalled_seconds",
                "How long the input partition has had fetched input that no committed batch covers (0: none)",
                labels=["topic", "partition"],
            ),
            GaugeMetricFamily(
                "binlake_partition_stalled",
                "1 while the input partition has waited longer than BINLAKE_STALL_THRESHOLD_S for a committed batch",
                labels=["topic", "partition"],
            ),
        )
