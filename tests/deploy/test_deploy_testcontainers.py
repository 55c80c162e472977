"""The Testcontainers path (BINLAKE_TESTCONTAINERS=1): the session's broker is a Kafka container, and the
pipeline's exactly-once path (transactions, read_committed) works on it. make test-deploy runs it on
podman with the locally built Kafka image (Ryuk disabled); elsewhere it skips, saying so.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pytest

from tests.support import kafka_tools
from tests.support.pipeline import (
    Topics,
    decode,
    normalizer_settings,
    run_normalizer_until_caught_up,
    send_workload,
)

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

EVENTS = 400


async def test_the_pipeline_runs_on_a_testcontainers_broker(kafka_bootstrap: str, tmp_path: Path) -> None:
    if os.environ.get("BINLAKE_TESTCONTAINERS") != "1":
        pytest.skip("the Testcontainers broker runs in `make test-deploy` (BINLAKE_TESTCONTAINERS=1)")
    topics = Topics.fresh("tc")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
    await send_workload(kafka_bootstrap, "canal-json", topics, events=EVENTS, seed=9, zone_name="UTC")
    await run_normalizer_until_caught_up(kafka_bootstrap, normalizer_settings("canal-json", topics, tmp_path, "UTC"), 2)
    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    assert events and max(seen.values()) == 1
    assert await kafka_tools.read_all(kafka_bootstrap, topics.dlq) == []
