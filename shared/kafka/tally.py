"""One batch's metric counts, kept aside and published to the metrics once its transaction commits.

A batch that aborts is processed again, so counting as records go would count it
twice; and Prometheus label lookups cost about a microsecond each, so the counts
are summed per batch and each label is looked up once per batch, not per event.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from binlake.shared.metrics.normalizer import NormalizerMetrics
from binlake.shared.normalize.codec import Normalized


@dataclass
class Tally:
    controls: Counter[str] = field(default_factory=Counter)
    filtered: Counter[str] = field(default_factory=Counter)
    events: Counter[tuple[str, str]] = field(default_factory=Counter)
    letters: Counter[str] = field(default_factory=Counter)
    """Dead letters by reject code."""
    last_seen: dict[str, int] = field(default_factory=dict)

    def seen(self, table: str, ts_ms: int) -> None:
        if ts_ms > self.last_seen.get(table, -(2**63)):
            self.last_seen[table] = ts_ms

    def accepted(self, normalized: Normalized) -> None:
        """Count one accepted message."""
        rows = normalized.rows
        if normalized.control is not None and not rows:
            self.controls[normalized.control] += 1
        for heartbeat in normalized.heartbeats:
            self.seen(heartbeat.table or "*", heartbeat.ts_ms)
        for table, count in normalized.filtered:
            self.filtered[table] += count
        for table, op, ts_ms, values in rows:
            self.events[(table, op)] += len(values) // 2
            if ts_ms is not None:
                self.seen(table, ts_ms)

    def publish(self, metrics: NormalizerMetrics, topic: str) -> None:
        """Add the counts to ``metrics`` (``topic``: the batch's input topic)."""
        for code, count in self.letters.items():
            metrics.dead_lettered.labels(topic, code).inc(count)
        # Table names and control kinds come from the messages: capped label sets (NormalizerMetrics).
        for kind, count in self.controls.items():
            metrics.controls.labels(metrics.control_kinds(kind)).inc(count)
        for table, count in self.filtered.items():
            metrics.filtered.labels(metrics.filtered_tables(table)).inc(count)
        for (table, op), count in self.events.items():
            metrics.events.labels(metrics.event_tables(table), op).inc(count)
        for table, ts_ms in self.last_seen.items():
            metrics.source_seen(table, ts_ms / 1000)
