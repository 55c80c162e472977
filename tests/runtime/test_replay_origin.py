"""A message `binlake dlq replay` re-fed is read at its original coordinates (real broker, real normalizer).

Its events keep the origin they would have had, and, for a format ordered by
Kafka position (canal-json), the ``order_key`` too: a replayed old change sorts
where it happened, never behind the newer changes of its row that came after it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kafka import records
from binlake.shared.parsing.order import order_key
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings, run_normalizer_until_caught_up

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_replayed_message_keeps_its_original_coordinates(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh("replay-origin")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 1, topics.events: 1, topics.dlq: 1})
    render_fn, ctx = render.get("canal-json"), render.RenderContext()
    first, second = (render_fn(change, ctx) for change in Workload(seed=3, tables=1).run(2))
    await kafka_tools.produce(kafka_bootstrap, topics.vendor, [(b"k", first)])
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap)
    await producer.start()
    try:
        origin = f"{topics.vendor}:0:7".encode()
        await producer.send_and_wait(topics.vendor, second, key=b"k", headers=[(records.H_REPLAYED_ORIGIN, origin)])
        # A replay header naming another topic is not this message's origin: ignored.
        elsewhere = b"other.topic:0:9"
        await producer.send_and_wait(topics.vendor, second, key=b"k", headers=[(records.H_REPLAYED_ORIGIN, elsewhere)])
    finally:
        await producer.stop()
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={"group_id": kafka_tools.unique("replay-origin")}
    )
    await run_normalizer_until_caught_up(kafka_bootstrap, settings, partitions=1)
    events = [event for _, event in decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))]
    for run in (events,):
        offsets = [e.origin.offset for e in run]
        assert offsets[0] == 0 and 7 in offsets and 2 in offsets and 1 not in offsets
        replayed = next(e for e in run if e.origin.offset == 7)
        assert replayed.order_key == order_key(0, 7, replayed.origin.row)
