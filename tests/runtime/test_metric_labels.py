"""Metric labels taken from message content (table names, control kinds) are capped per metric.

A table name comes from the vendor message: hostile or broken input naming a new
table in every message would otherwise grow the metrics registry (and every
scrape) without bound. Past ``BINLAKE_METRICS_MAX_LABEL_VALUES`` distinct values
a metric counts new ones under ``__other__``.
"""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry

from binlake.shared.config.settings import KafkaSettings, NormalizerSettings
from binlake.shared.kafka.runtime import Normalizer
from binlake.shared.kafka.tally import Tally

pytestmark = pytest.mark.unit


def _series(registry: CollectorRegistry, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(sample.labels.items())): sample.value
        for family in registry.collect()
        for sample in family.samples
        if sample.name == name
    }


def test_table_labels_are_capped_with_an_overflow_value() -> None:
    settings = NormalizerSettings(format="canal-json", input_topics=["in"], metrics_max_label_values=3)
    normalizer = Normalizer(settings, KafkaSettings())
    for batch in range(3):
        tally = Tally()
        for n in range(400):
            table = f"db.t{batch * 400 + n}"
            tally.events[(table, "c")] += 1
            tally.filtered[table] += 2
            tally.seen(table, 1_700_000_000_000 + batch * 400 + n)
        tally.controls[f"transaction_{batch}"] += 1  # a kind read from the message (debezium's status)
        tally.publish(normalizer.metrics, "in")
    registry = normalizer.metrics.registry
    events = _series(registry, "binlake_events_total")
    assert len(events) == 4
    assert events[(("op", "c"), ("table", "__other__"))] == 1200 - 3
    assert sum(events.values()) == 1200  # nothing uncounted
    filtered = _series(registry, "binlake_filtered_events_total")
    assert len(filtered) == 4 and filtered[(("table", "__other__"),)] == 2 * (1200 - 3)
    seen = _series(registry, "binlake_source_last_seen_seconds")
    assert len(seen) == 4
    assert seen[(("table", "__other__"),)] == (1_700_000_000_000 + 1199) / 1000  # the newest of the others
    assert len(_series(registry, "binlake_control_messages_total")) == 3
