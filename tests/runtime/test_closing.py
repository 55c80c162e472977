"""Clients closed within a time limit while the brokers are away (shared/kafka/closing.py).

aiokafka retries an idempotent producer's batch for as long as the brokers are away, so
its ``stop()`` never returned in an outage; a consumer's ``stop()`` waits for its group
coordination. The closes use aiokafka's private accumulator, coordinator, fetcher and
client (it has no public way to give up); these tests also notice when a new aiokafka
renames them.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaTimeoutError

from binlake.shared.devbroker import broker
from binlake.shared.kafka.closing import FORCED_S, close_consumer, close_producer
from tests.support import kafka_tools

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


async def test_a_producer_whose_batch_waits_for_absent_brokers_closes_in_time(
    kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    del kafka_bootstrap  # ensures the environment can run a broker; this test stops its own
    run_dir = tmp_path / "broker"
    bootstrap = (await asyncio.to_thread(broker.start, run_dir)).bootstrap
    try:
        topic = kafka_tools.unique("closing")
        await kafka_tools.create_topics(bootstrap, {topic: 1})
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True)
        await producer.start()
        accumulator: Any = getattr(producer, "_message_accumulator", None)
        assert callable(getattr(accumulator, "fail_all", None)), "aiokafka renamed what a forced close fails"
        await (await producer.send(topic, b"acknowledged"))
        await asyncio.to_thread(broker.stop, run_dir)
        sent = await producer.send(topic, b"never acknowledged")
        await asyncio.sleep(1)  # retried while the broker is away
        assert not sent.done()
        began = time.monotonic()
        assert await close_producer(producer, 1.0) is False  # forced
        took = time.monotonic() - began
        assert took < 1.0 + FORCED_S, f"the close took {took:.2f} s"
        assert isinstance(sent.exception(), KafkaTimeoutError)
        del producer, sent, accumulator
        gc.collect()
        # Nothing for asyncio to report: no error never retrieved, no callback of aiokafka's failing.
        assert not [r.getMessage() for r in caplog.records if r.name == "asyncio" and r.levelno >= logging.ERROR]
    finally:
        await asyncio.to_thread(broker.stop, run_dir)


async def test_a_producer_with_nothing_pending_closes_without_being_forced(kafka_bootstrap: str) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka_bootstrap, enable_idempotence=True)
    await producer.start()
    assert await close_producer(producer, 10.0) is True


async def test_a_consumer_closed_without_the_brokers_leaves_no_task_running(kafka_bootstrap: str) -> None:
    topic = kafka_tools.unique("closing")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    consumer = AIOKafkaConsumer(topic, bootstrap_servers=kafka_bootstrap, group_id=kafka_tools.unique("closing"))
    await consumer.start()
    await consumer.getmany(timeout_ms=2000)  # in the group
    untyped: Any = consumer
    coordinator, fetcher, client = untyped._coordinator, untyped._fetcher, untyped._client
    for owner, name in [
        (coordinator, "_stop_heartbeat_task"),
        (coordinator, "_stop_commit_offsets_refresh_task"),
        (fetcher, "close"),
        (client, "close"),
    ]:
        assert callable(getattr(owner, name, None)), f"aiokafka renamed {name}, which a forced close runs"
    began = time.monotonic()
    assert await close_consumer(consumer, 0.0) is False  # no time for the brokers: forced at once
    assert time.monotonic() - began < 4 * FORCED_S
    assert coordinator._coordination_task.done()
    assert fetcher._fetch_task.done()
    assert not any(connection.connected() for connection in client._conns.values())
