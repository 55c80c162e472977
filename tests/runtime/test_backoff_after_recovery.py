"""After a recovery, the next failure waits the first pause again, not the longest one.

The pause after a failure doubled and never came down: after one outage, every later
error of the service's life waited BINLAKE_RETRY_BACKOFF_MAX_S. Here the failures are
real connection failures: the producers the factory makes while it is told to fail
point at a port where no broker listens (the factory is the seam; broker, group and
coordinators are real), so their start fails, the assignment fails and the instance
leaves the group and backs off. Three failures in a row raise the pause; batches then
commit; a later failure (in the rebalance a second member of the group causes) must
wait the first pause again. The input ends up normalized exactly once.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

from binlake.shared.config.settings import kafka_settings
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings, send_workload

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


class _FailingStarts:
    """Makes real producers; the next ``failing`` of them are sent to a closed port, so their start() fails."""

    def __init__(self, failing: int) -> None:
        self.failing = failing

    def __call__(self, **options: Any) -> AIOKafkaProducer:
        if self.failing > 0:
            self.failing -= 1
            options = {**options, "bootstrap_servers": "127.0.0.1:1"}
        return AIOKafkaProducer(**options)


def _pauses(caplog: pytest.LogCaptureFixture) -> list[float]:
    return [float(r.__dict__["backoff_s"]) for r in caplog.records if "backoff_s" in r.__dict__]


async def _until(condition: Any, timeout_s: float, what: str) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.1)


async def test_the_back_off_starts_again_from_the_first_pause_after_commits(
    kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="binlake.normalizer")
    topics = Topics.fresh("backoff")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
    sent = await send_workload(kafka_bootstrap, "canal-json", topics, events=300, seed=91, zone_name="UTC")
    factory = _FailingStarts(failing=3)
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={"retry_backoff_max_s": 8.0, "session_timeout_ms": 6000}
    )
    normalizer = Normalizer(settings, kafka_settings(kafka_bootstrap), make_producer=factory)
    task = asyncio.create_task(normalizer.run())
    try:
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 2, timeout_s=90)
        raised = _pauses(caplog)
        recovered = [r for r in caplog.records if r.getMessage() == "committing again after broker errors"]

        factory.failing = 1
        # A second member joins: the rebalance gives the normalizer new partitions, whose producer fails to start.
        member = AIOKafkaConsumer(
            topics.vendor, bootstrap_servers=kafka_bootstrap, group_id=topics.group, enable_auto_commit=False
        )
        await member.start()
        try:
            await _until(lambda: len(_pauses(caplog)) > len(raised), 60, "the rebalance's failure never backed off")
        finally:
            await member.stop()
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 2, timeout_s=90)
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)

    assert raised == [0.5, 1.0, 2.0], raised
    assert recovered, "no batch committed after the failures"
    later = _pauses(caplog)[len(raised)]
    assert later == 0.5, f"after commits the pause went on from {raised[-1]} s: {later} s"
    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    assert not [origin for origin, count in seen.items() if count > 1], "duplicates"
    assert set(seen) == set(sent.by_origin), "lost input"
