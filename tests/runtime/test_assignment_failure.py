"""An assignment that cannot start every partition's producer: the instance leaves the group and joins again.

aiokafka logs what a rebalance listener raises and carries on, so a producer
that failed to start in an assignment used to leave its partition without a
producer (its fetched records silently skipped until the next rebalance) and
the partitions started before it without their rewind. Here the second producer
of the first assignment points at a port where no broker listens, a real
connection failure (the producer factory is the seam; the broker is real). The
assignment must start nothing (no producer leaked), the instance must leave the
group and join again, and every input message must then be normalized exactly
once.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from binlake.shared.config.settings import kafka_settings
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings, send_workload

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class _SecondStartFails:
    """Makes real producers; the second one is sent to a closed port, so its start() fails."""

    def __init__(self) -> None:
        self.made: list[AIOKafkaProducer] = []

    def __call__(self, **options: Any) -> AIOKafkaProducer:
        if len(self.made) == 1:
            options = {**options, "bootstrap_servers": "127.0.0.1:1"}
        producer = AIOKafkaProducer(**options)
        self.made.append(producer)
        return producer


async def test_a_failed_assignment_leaves_the_group_and_loses_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh("assign")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
    sent = await send_workload(kafka_bootstrap, "canal-json", topics, events=400, seed=61, zone_name="UTC")
    assert {partition for partition, _ in sent.by_origin} == {0, 1}
    factory = _SecondStartFails()
    normalizer = Normalizer(
        normalizer_settings("canal-json", topics, tmp_path, "UTC"),
        kafka_settings(kafka_bootstrap),
        make_producer=factory,
    )
    task = asyncio.create_task(normalizer.run())
    try:
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 2, timeout_s=60)
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)

    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    assert not [origin for origin, count in seen.items() if count > 1], "duplicates"
    assert set(seen) == set(sent.by_origin), "lost input"
    assert len(factory.made) >= 4, "the failed assignment, then a full one"
    leaked = [producer for producer in factory.made if not producer._closed]  # type: ignore[attr-defined]
    assert not leaked, f"{len(leaked)} producers never stopped"
    rejoins = normalizer.metrics.registry.get_sample_value(
        "binlake_group_rejoins_total", {"cause": "assignment_failed"}
    )
    assert rejoins == 1
