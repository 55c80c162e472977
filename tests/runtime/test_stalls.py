"""Stalled partitions: the progress clocks, /readyz, the metrics, and the alert that reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from aiokafka import TopicPartition
from prometheus_client import CollectorRegistry, generate_latest

from binlake.shared.kafka.progress import Progress
from binlake.shared.metrics.liveness import Liveness
from binlake.shared.metrics.normalizer import NormalizerMetrics
from binlake.shared.metrics.readiness import NormalizerHealth
from tests.support.service_process import probe

pytestmark = pytest.mark.unit

A, B = TopicPartition("in", 0), TopicPartition("in", 1)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_partition_stalls_when_fetched_input_waits_past_the_threshold() -> None:
    clock = _Clock()
    progress = Progress(30.0, clock)
    progress.waiting(A)
    clock.now += 10
    progress.waiting(A)  # the clock runs from the first uncommitted fetch, not the latest
    progress.waiting(B)
    progress.committed(B)
    clock.now += 25
    assert progress.waits() == {A: 35.0}
    assert progress.stalled() == [A]
    progress.assigned([B])  # A now belongs to another instance: its clock is not ours to report
    assert progress.stalled() == []
    progress.waiting(B)
    clock.now += 31
    progress.committed(B)
    assert progress.stalled() == []


def test_stall_metrics_are_computed_when_scraped() -> None:
    metrics = NormalizerMetrics()
    waits = {("in", 0): 200.0}
    metrics.stalls.watch(lambda: waits, lambda: [("in", 0), ("in", 1)], 120.0)
    text = generate_latest(metrics.registry).decode()
    assert 'binlake_partition_stalled{partition="0",topic="in"} 1.0' in text
    assert 'binlake_partition_stalled{partition="1",topic="in"} 0.0' in text
    assert 'binlake_partition_stalled_seconds{partition="0",topic="in"} 200.0' in text
    waits.clear()
    assert 'binlake_partition_stalled{partition="0",topic="in"} 0.0' in generate_latest(metrics.registry).decode()


@pytest.mark.asyncio
async def test_readyz_fails_while_a_partition_is_stalled() -> None:
    stalled: list[str] = []
    health = NormalizerHealth(CollectorRegistry(), liveness=Liveness(60.0), stalled=lambda: stalled)
    await health.start("127.0.0.1", 0)
    try:
        assert (await probe(health.port, "/readyz"))[0] == 503  # not started
        health.ready = True
        assert await probe(health.port, "/readyz") == (200, "ready\n")
        stalled.append("in:0")
        assert await probe(health.port, "/readyz") == (503, "stalled partitions: in:0\n")
        assert (await probe(health.port, "/healthz"))[0] == 200  # liveness: a restart would not help
    finally:
        await health.stop()


def test_every_normalizer_metric_an_alert_reads_exists() -> None:
    """promtool is not part of the test tooling: this checks the rules' metric names against the registry."""
    alerts = (Path(__file__).parents[2] / "deploy" / "prometheus" / "alerts.yml").read_text("utf-8")
    metrics = NormalizerMetrics()
    metrics.stalls.watch(dict, lambda: [("in", 0)], 1.0)
    suffixes = ("", "_total", "_bucket", "_count", "_sum")
    exposed = {family.name + suffix for family in metrics.registry.collect() for suffix in suffixes}
    for name in set(re.findall(r"\b(binlake_\w+)", alerts)):
        if name.startswith("binlake_sink_"):
            continue  # the sink's (spark_sink/observe/metrics.py)
        assert name in exposed, f"alerts.yml reads {name}, which nothing exports"
    assert "BinlakePartitionStalled" in alerts
