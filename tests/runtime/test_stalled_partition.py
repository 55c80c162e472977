"""A partition that cannot make progress fails /readyz and shows in binlake_partition_stalled.

The dead-letter topic here refuses every record (``max.message.bytes`` 100), so
a malformed message can be neither published nor dead-lettered, not even as a
bare letter: the normalizer backs off and retries for ever, as it must (it
never drops a message). Health used to stay green through that (``/readyz``
was 503 only inside each back-off); the partition must be reported stalled
once its input has waited past ``BINLAKE_STALL_THRESHOLD_S``, across the
client restarts of the back-off.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from binlake.shared.config.settings import kafka_settings
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import Topics, normalizer_settings
from tests.support.service_process import probe

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_a_stuck_partition_fails_readiness(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh("stall")
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        await admin.create_topics(
            [
                NewTopic(topics.vendor, 1, 1),
                NewTopic(topics.events, 1, 1),
                NewTopic(topics.dlq, 1, 1, topic_configs={"max.message.bytes": "100"}),
            ]
        )
    finally:
        await admin.close()
    await asyncio.sleep(0.5)
    await kafka_tools.produce(kafka_bootstrap, topics.vendor, [(None, b'{"data": [')])
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={"stall_threshold_s": 3.0, "retry_backoff_max_s": 1.0}
    )
    normalizer = Normalizer(settings, kafka_settings(kafka_bootstrap))
    task = asyncio.create_task(normalizer.run())
    try:
        answer = (0, "")
        for _ in range(300):
            await asyncio.sleep(0.1)
            if normalizer.health._server is None:
                continue
            answer = await probe(normalizer.health.port, "/readyz")
            if answer == (503, f"stalled partitions: {topics.vendor}:0\n"):
                break
        assert answer == (503, f"stalled partitions: {topics.vendor}:0\n")
        status, metrics = await probe(normalizer.health.port, "/metrics")
        assert status == 200
        assert f'binlake_partition_stalled{{partition="0",topic="{topics.vendor}"}} 1.0' in metrics
        assert (await probe(normalizer.health.port, "/healthz"))[0] == 200
        errors = normalizer.metrics.registry.get_sample_value(
            "binlake_broker_errors_total", {"error": "DeadLetterRefused"}
        )
        assert errors and errors >= 1
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)
    assert not await kafka_tools.group_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1)  # nothing dropped
