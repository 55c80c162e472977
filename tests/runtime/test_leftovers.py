"""A producer whose sender died fenced leaves failed futures; once let go, none is logged as an ERROR.

On aiokafka's real producer (no broker needed): its sender's done-callback is what runs
when the sender task dies (``ProducerFenced`` after a transaction timeout, a broker
outage), and it fails the open transaction and every batch still in the accumulator.
Without ``consume_leftovers`` asyncio reports each of those futures when collected,
"Future exception was never retrieved" at ERROR with a traceback: the first test shows
that it does, so the second one proves something.
"""

from __future__ import annotations

import asyncio
import gc
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.errors import ProducerFenced

from binlake.shared.kafka.leftovers import consume, consume_leftovers

pytestmark = [pytest.mark.unit, pytest.mark.asyncio]

NEVER_RETRIEVED = "exception was never retrieved"


async def _fenced_producer() -> tuple[AIOKafkaProducer, list[asyncio.Future[Any]]]:
    """A producer mid-transaction with records of two partitions queued, whose sender then died fenced;
    the futures of its sends."""
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", transactional_id="t", enable_idempotence=True)
    manager: Any = producer._txn_manager  # type: ignore[attr-defined]  # aiokafka's, not public
    manager.set_pid_and_epoch(1, 0)
    manager.begin_transaction()
    accumulator: Any = producer._message_accumulator  # type: ignore[attr-defined]
    sends = [await accumulator.add_message(TopicPartition("out", p), b"k", b"v", timeout=1) for p in (0, 1)]

    async def sender() -> None:
        raise ProducerFenced()

    task = asyncio.ensure_future(sender())
    await asyncio.wait([task])
    producer._sender._fail_all(task)  # type: ignore[attr-defined]  # what the sender task's end runs
    return producer, sends


def _never_retrieved(caplog: pytest.LogCaptureFixture) -> list[str]:
    gc.collect()
    return [r.getMessage() for r in caplog.records if r.name == "asyncio" and NEVER_RETRIEVED in r.getMessage()]


async def test_a_fenced_producer_leaves_futures_asyncio_would_report(caplog: pytest.LogCaptureFixture) -> None:
    producer, sends = await _fenced_producer()
    consume(sends)  # the batch's own futures: settle (or the runtime's finally) reads them
    await producer.stop()
    del producer, sends
    assert len(_never_retrieved(caplog)) == 3  # the transaction's waiter, each queued batch's drain waiter


async def test_consumed_leftovers_are_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    producer, sends = await _fenced_producer()
    consume(sends)
    await producer.stop()
    consume_leftovers(producer)
    del producer, sends
    assert _never_retrieved(caplog) == []


async def test_futures_still_running_are_consumed_when_they_end(caplog: pytest.LogCaptureFixture) -> None:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    consume([future])
    future.set_exception(ProducerFenced())
    await asyncio.sleep(0)  # the done-callback runs on the next turn of the loop
    del future
    assert _never_retrieved(caplog) == []
