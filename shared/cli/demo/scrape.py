"""Reading the services' ``/metrics`` endpoints, as an operator's Prometheus would.

``scrape(port)`` fetches one endpoint and returns its samples; the small
readers below sum the series the demo shows (metric names: docs/operations.md
for the normalizer, docs/spark-sink.md for the sink). A service that does not
answer yet (starting) or any more (stopped) gives None, never an exception.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from collections import Counter
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families


@dataclass(frozen=True, slots=True)
class Samples:
    values: list[tuple[str, dict[str, str], float]] = field(default_factory=list)

    def total(self, name: str, **labels: str) -> float:
        """The sum of the series ``name`` whose labels include ``labels``."""
        return sum(
            value
            for sample, sample_labels, value in self.values
            if sample == name and all(sample_labels.get(k) == v for k, v in labels.items())
        )

    def by_label(self, name: str, label: str) -> Counter[str]:
        out: Counter[str] = Counter()
        for sample, labels, value in self.values:
            if sample == name and label in labels and value:
                out[labels[label]] += int(value)
        return out

    def maximum(self, name: str) -> float | None:
        found = [value for sample, _, value in self.values if sample == name]
        return max(found) if found else None


def scrape(port: int, *, timeout_s: float = 1.0) -> Samples | None:
    """The samples of ``http://127.0.0.1:<port>/metrics``; None when it does not answer."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=timeout_s) as response:
            text = response.read().decode("utf-8", errors="replace")
    except (OSError, urllib.error.URLError, ValueError):
        return None
    values = []
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values.append((sample.name, dict(sample.labels), float(sample.value)))
    return Samples(values)


@dataclass(slots=True)
class NormalizerView:
    """One normalizer's numbers for the progress table."""

    consumed: int = 0
    produced: int = 0
    dead_letters: Counter[str] = field(default_factory=Counter)
    lag: int = 0
    up: bool = False

    @classmethod
    def of(cls, samples: Samples | None) -> NormalizerView:
        if samples is None:
            return cls()
        return cls(
            consumed=int(samples.total("binlake_consumed_messages_total")),
            produced=int(samples.total("binlake_produced_events_total")),
            dead_letters=samples.by_label("binlake_dead_letters_total", "reason"),
            lag=int(samples.total("binlake_consumer_lag")),
            up=True,
        )


@dataclass(slots=True)
class SinkView:
    """The sink's numbers for the progress table."""

    up: bool = False
    changelog_rows: int = 0
    quarantined: int = 0
    mirror_rows: int = 0
    batches: int = 0
    mirror_newest_event_s: float | None = None
    """Newest ``ts_ms`` (epoch s) applied to any mirror: mirror freshness = now - this."""
    mirror_last_commit_s: float | None = None

    @classmethod
    def of(cls, samples: Samples | None) -> SinkView:
        if samples is None:
            return cls()
        return cls(
            up=True,
            changelog_rows=int(samples.total("binlake_sink_changelog_rows_total")),
            quarantined=int(samples.total("binlake_sink_quarantined_rows_total")),
            mirror_rows=int(samples.total("binlake_sink_mirror_rows_total")),
            batches=int(samples.total("binlake_sink_batches_total")),
            mirror_newest_event_s=samples.maximum("binlake_sink_mirror_last_event_timestamp_seconds"),
            mirror_last_commit_s=samples.maximum("binlake_sink_mirror_last_commit_timestamp_seconds") or None,
        )
