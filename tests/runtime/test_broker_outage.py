"""A broker outage in the middle of a run: the normalizer backs off, resumes, and stays exact.

Uses its own broker (not the session one), stops it while the normalizer is
busy, starts it again on the same ports with the same data, and checks that
every input message is represented exactly once afterwards.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path

import pytest

from binlake.shared.config.settings import kafka_settings
from binlake.shared.devbroker import broker
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

EVENTS = 3000


def _consumed(normalizer: Normalizer, topic: str) -> float:
    return normalizer.metrics.registry.get_sample_value("binlake_consumed_messages_total", {"topic": topic}) or 0.0


async def test_normalizer_survives_a_broker_outage(kafka_bootstrap: str, tmp_path: Path) -> None:
    del kafka_bootstrap  # ensures the environment can run a broker; this test runs its own
    run_dir = tmp_path / "broker"
    info = await asyncio.to_thread(broker.start, run_dir)
    bootstrap = info.bootstrap
    try:
        topics = Topics.fresh("outage")
        await kafka_tools.create_topics(bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
        render_fn = render.get("canal-json")
        items = [(None, render_fn(c, render.RenderContext())) for c in Workload(seed=4, tables=2).run(EVENTS)]
        positions = await kafka_tools.produce(bootstrap, topics.vendor, items)
        settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
            update={"batch_max_messages": 5, "retry_backoff_max_s": 2.0, "session_timeout_ms": 6000}
        )
        normalizer = Normalizer(settings, kafka_settings(bootstrap))
        task = asyncio.create_task(normalizer.run())
        try:
            await asyncio.sleep(4)  # mid-run
            done_before = _consumed(normalizer, topics.vendor)
            await asyncio.to_thread(broker.stop, run_dir)
            await asyncio.sleep(6)  # the outage
            await asyncio.to_thread(broker.restart, run_dir)
            await kafka_tools.wait_caught_up(bootstrap, topics.group, topics.vendor, 2, timeout_s=180)
        finally:
            normalizer.stop()
            await asyncio.wait_for(task, 90)
        print(f"outage after {done_before:.0f} of {EVENTS} messages")
        assert 0 < done_before < EVENTS, f"the outage must hit a busy normalizer ({done_before} of {EVENTS} done)"
        events = decode(await kafka_tools.read_all(bootstrap, topics.events))
        seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
        assert not [origin for origin, count in seen.items() if count > 1], "duplicates after the outage"
        assert set(seen) == set(positions), "events lost in the outage"
    finally:
        await asyncio.to_thread(broker.stop, run_dir)
