"""The service's operational surface on a real broker: /metrics, /healthz, /readyz, table filters."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from binlake.shared.config.settings import kafka_settings
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings
from tests.support.service_process import probe

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_metrics_health_and_table_filters(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh("ops")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 1, topics.events: 1, topics.dlq: 1})
    changes = list(Workload(seed=3, tables=3).run(120))
    render_fn = render.get("canal-json")
    await kafka_tools.produce(
        kafka_bootstrap, topics.vendor, [(None, render_fn(c, render.RenderContext())) for c in changes] + [(None, b"{")]
    )
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={"exclude_tables": ["shop.t01"]}
    )
    normalizer = Normalizer(settings, kafka_settings(kafka_bootstrap))
    task = asyncio.create_task(normalizer.run())
    try:
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1)
        port = normalizer.health.port
        assert await probe(port, "/healthz") == (200, "ok\n")
        assert await probe(port, "/readyz") == (200, "ready\n")
        status, metrics = await probe(port, "/metrics")
        assert status == 200
        assert f'binlake_consumed_messages_total{{topic="{topics.vendor}"}} 121.0' in metrics
        assert f'binlake_dead_letters_total{{reason="malformed",topic="{topics.vendor}"}} 1.0' in metrics
        assert 'binlake_source_last_seen_seconds{table="shop.t00"}' in metrics
        assert "binlake_batch_seconds_bucket" in metrics
        assert (await probe(port, "/nope"))[0] == 404
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)
    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    kept = [c for c in changes if c.table != "t01"]
    assert len(events) == len(kept)
    assert {event.source.table for _, event in events} == {"t00", "t02"}
    skipped = normalizer.metrics.registry.get_sample_value("binlake_filtered_events_total", {"table": "shop.t01"})
    assert skipped == len(changes) - len(kept)
