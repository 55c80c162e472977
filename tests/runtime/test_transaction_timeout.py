"""A batch held open past the transaction timeout: the coordinator fences its producer; the partition recovers.

Without any rebalance, the transaction coordinator aborts a transaction older
than ``BINLAKE_TRANSACTION_TIMEOUT_MS`` and bumps its producer's epoch, so the
batch's commit fails as fenced. The partition is still this instance's: it must
get a new producer (init, rewind to the committed offset) and go on, not stay
skipped while the group is stable. The hold is a real delay in the first commit
(the producer factory is the seam; broker and coordinator are real).
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

TIMEOUT_MS = 1000
HOLD_S = TIMEOUT_MS / 1000 + 10 + 3
"""Past the timeout and the coordinator's scan for expired transactions (every 10 s by default)."""


class _SlowFirstCommit(AIOKafkaProducer):
    held = 0

    async def commit_transaction(self) -> None:
        if _SlowFirstCommit.held == 0:
            _SlowFirstCommit.held += 1
            await asyncio.sleep(HOLD_S)  # a batch stuck past the timeout (a GC pause, a starved CPU)
        await super().commit_transaction()


def _make(**options: Any) -> AIOKafkaProducer:
    return _SlowFirstCommit(**options)


async def test_a_partition_fenced_by_a_transaction_timeout_recovers(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh("txtimeout")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 1, topics.events: 2, topics.dlq: 1})
    sent = await send_workload(kafka_bootstrap, "canal-json", topics, events=300, seed=71, zone_name="UTC")
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={"batch_max_messages": 50, "transaction_timeout_ms": TIMEOUT_MS}
    )
    normalizer = Normalizer(settings, kafka_settings(kafka_bootstrap), make_producer=_make)
    task = asyncio.create_task(normalizer.run())
    try:
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1, timeout_s=HOLD_S + 45)
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)

    registry = normalizer.metrics.registry
    assert _SlowFirstCommit.held == 1
    assert registry.get_sample_value("binlake_transaction_aborts_total", {"cause": "fenced"}) == 1.0
    assert not registry.get_sample_value("binlake_group_rejoins_total", {"cause": "ownership_unconfirmed"})
    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    assert not [origin for origin, count in seen.items() if count > 1], "duplicates"
    assert set(seen) == set(sent.by_origin), "lost input"
