"""Closing aiokafka clients within a time limit, with or without the brokers.

aiokafka's ``stop()`` waits on the brokers without a limit in an outage:

- a producer's ``stop()`` first delivers every batch it holds, and an idempotent
  producer's batches never expire (aiokafka retries them until a broker takes them);
- a consumer's ``stop()`` first lets its group coordination task finish, which looks
  for the group coordinator until one answers (or runs a rebalance listener that waits
  on the transaction coordinator), then sends LeaveGroup.

A normalizer asked to stop must exit within ``BINLAKE_STOP_TIMEOUT_S`` (Kubernetes'
grace period ends in SIGKILL), and a producer let go in a rebalance or replaced must
not hold the consume loop for the whole outage. So each close gets a time limit. A
producer still stopping at its limit has its sender cancelled and its pending batches
failed: ``stop()`` then closes its connections without the brokers. Nothing is lost by it: the
batches belong to a transaction that is never committed, which the transaction
coordinator aborts after its timeout (or the partition's next producer, at its
``init_transactions``), and the input is read again from the committed offset. A
consumer still stopping at its limit is cancelled and its fetcher and connections are
closed: it leaves the group by its session timeout instead of at once.

aiokafka has no public way to do either: its accumulator, fetcher, coordinator and client
are reached with ``getattr``, so a renamed attribute makes a close less thorough rather
than failing a stop (tests/runtime/test_closing.py notices).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaError, KafkaTimeoutError

from binlake.shared.kafka.leftovers import consume_leftovers

log = logging.getLogger("binlake.normalizer")

FORCED_S: Final = 1.0
"""How long a close may take once it no longer waits on the brokers (closing sockets, ending tasks)."""


async def close_producer(producer: AIOKafkaProducer, timeout_s: float) -> bool:
    """Stop ``producer``, waiting at most ``timeout_s`` for the brokers; True if it stopped without being forced.

    Cancelled meanwhile (a stop past its time limit), it is forced as well, so the stop under way ends instead of
    running on, unawaited, against absent brokers.
    """
    stopping = asyncio.ensure_future(producer.stop())
    unforced = await _stop_within(
        stopping, timeout_s, lambda: _force(producer, stopping), "producer closed without the brokers"
    )
    consume_leftovers(producer)
    return unforced


async def close_consumer(consumer: AIOKafkaConsumer, timeout_s: float) -> bool:
    """Stop ``consumer`` (it leaves its group), waiting at most ``timeout_s``; True if it stopped unforced."""
    stopping = asyncio.ensure_future(consumer.stop())
    return await _stop_within(
        stopping, timeout_s, lambda: _force_consumer(consumer, stopping), "consumer closed without the brokers"
    )


async def _stop_within(
    stopping: asyncio.Future[None], timeout_s: float, force: Callable[[], Awaitable[None]], forced_message: str
) -> bool:
    """Wait at most ``timeout_s`` for a client's ``stop()`` under way, else (or when cancelled meanwhile) ``force``
    it; True if it ended unforced."""
    forced = False
    try:
        await asyncio.wait({stopping}, timeout=max(0.0, timeout_s))
    finally:
        if not stopping.done():
            forced = True
            await force()
            log.warning(forced_message, extra={"timeout_s": round(timeout_s, 3)})
    _outcome(stopping)
    return not forced


async def _force_consumer(consumer: AIOKafkaConsumer, stopping: asyncio.Future[None]) -> None:
    # Cancelling the stop cancels what it waits on: the group coordination task, or the LeaveGroup request.
    stopping.cancel()
    await asyncio.wait({stopping}, timeout=FORCED_S)
    await _close_parts(consumer)


async def _force(producer: AIOKafkaProducer, stopping: asyncio.Future[None]) -> None:
    """End the producer's ``stop()`` under way without the brokers: its sender first, then its batches.

    The sender goes first: a batch failed while its request is in flight is re-queued when the request
    fails, after the failure took it off the in-flight list, and aiokafka's sender then dies of a KeyError
    (seen in tests/runtime/test_closing.py). Cancelled, the sender waits for its requests in flight (a
    frozen broker holds one up to the request timeout); cancelled again, it stops waiting. Once the sender
    is done, ``stop()`` goes on to close the connections, and failing the batches ends its flush.
    """
    untyped: Any = producer
    sender_task = getattr(getattr(untyped, "_sender", None), "sender_task", None)
    if isinstance(sender_task, asyncio.Task):
        for _ in range(3):
            if sender_task.done():
                break
            sender_task.cancel()
            await asyncio.wait({sender_task}, timeout=FORCED_S / 3)
    accumulator = getattr(untyped, "_message_accumulator", None)
    fail_all = getattr(accumulator, "fail_all", None)
    if fail_all is not None:
        # First: a failed batch leaves the accumulator as soon as it ends, and with it what would find its futures.
        consume_leftovers(producer)
        # A batch sent once and queued again for a retry keeps the callback that takes it off the in-flight set
        # when it ends, though it is no longer there: failed, it would log a KeyError from aiokafka's callback.
        queued = [batch for queue in getattr(accumulator, "_batches", {}).values() for batch in queue]
        in_flight = getattr(accumulator, "_pending_batches", None)
        if isinstance(in_flight, set):
            in_flight.update(queued)
        fail_all(KafkaTimeoutError("the producer was closed before the brokers took its batches"))
    await asyncio.wait({stopping}, timeout=FORCED_S)
    if not stopping.done():
        stopping.cancel()
        await asyncio.wait({stopping}, timeout=FORCED_S)


async def _close_parts(consumer: AIOKafkaConsumer) -> None:
    """What ``AIOKafkaConsumer.stop`` closes after its coordinator, for a stop cancelled in the coordinator: the
    coordinator's own tasks, the fetcher and the connections."""
    untyped: Any = consumer
    coordinator = getattr(untyped, "_coordinator", None)
    parts = [
        getattr(coordinator, "_stop_heartbeat_task", None),
        getattr(coordinator, "_stop_commit_offsets_refresh_task", None),
        getattr(getattr(untyped, "_fetcher", None), "close", None),
        getattr(getattr(untyped, "_client", None), "close", None),
    ]
    for close in parts:
        if close is None:
            continue
        with contextlib.suppress(KafkaError, OSError, TimeoutError):
            await asyncio.wait_for(close(), FORCED_S)


def _outcome(stopping: asyncio.Future[None]) -> None:
    """Read how the stop ended, so asyncio has no unretrieved error to log; broker errors of a client being let go
    are expected (it may be fenced or cut off)."""
    if not stopping.done() or stopping.cancelled():
        return
    error = stopping.exception()
    if error is not None and not isinstance(error, (KafkaError, OSError)):
        raise error
