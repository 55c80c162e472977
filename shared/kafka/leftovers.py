"""The futures a failed batch or a let-go producer leaves behind: their errors are consumed, not logged.

asyncio logs "Future exception was never retrieved", at ERROR and with a traceback, for
every future that ended in an error nobody asked for, when the future is collected. The
runtime has handled those errors already (the batch aborted or the producer replaced),
so the lines were noise that looked like crashes, e.g. three after "normalizer stopped"
in a run where a producer had been fenced (one started before the runtime's ``gc.freeze``
is collected only at the process's exit). They come from:

- a batch that fails before it waits for all its sends (a send raised): the futures of
  the sends before it fail when the producer gives up on them;
- aiokafka's transaction waiter, which a fenced or dead sender fails and only a commit
  or an abort awaits: a fenced producer is replaced, never committed;
- the record batches still in the producer's accumulator, failed when its sender died.

aiokafka has no public handle on the last two: they are read as its own transaction and
accumulator code reads them, each one looked up with ``getattr`` so that a renamed
attribute consumes less instead of failing a stop (tests/runtime/test_leftovers.py
notices).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from aiokafka import AIOKafkaProducer


def consume(futures: Iterable[asyncio.Future[Any]]) -> None:
    """Retrieve each future's error now, or when it ends."""
    for future in futures:
        if future.done():
            _retrieve(future)
        else:
            future.add_done_callback(_retrieve)


def consume_leftovers(producer: AIOKafkaProducer) -> None:
    """Retrieve the errors of the futures a stopped producer still holds (its transaction's, its batches')."""
    consume(_producer_futures(producer))


def _producer_futures(producer: AIOKafkaProducer) -> list[asyncio.Future[Any]]:
    found: list[Any] = []
    manager = getattr(producer, "_txn_manager", None)
    if manager is not None:
        found.append(getattr(manager, "_transaction_waiter", None))
        found.extend(pending[-1] for pending in getattr(manager, "_pending_txn_offsets", ()))
    accumulator = getattr(producer, "_message_accumulator", None)
    if accumulator is not None:
        batches = [batch for queue in getattr(accumulator, "_batches", {}).values() for batch in queue]
        batches.extend(getattr(accumulator, "_pending_batches", ()))
        for batch in batches:
            found.append(getattr(batch, "future", None))
            found.append(getattr(batch, "_drain_waiter", None))
            found.extend(future for future, _ in getattr(batch, "_msg_futures", ()))
    return [future for future in found if isinstance(future, asyncio.Future)]


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()  # marks the error retrieved: asyncio then has nothing to report
