"""The runtime's test for a transaction it cannot abort (``runtime._cannot_abort``), on aiokafka's real state machine.

A producer whose sender task died (a broker outage can end it) is in aiokafka's
fatal transaction state; ``abort_transaction`` then fails on an ``assert``, not
a ``KafkaError``, so the runtime must recognise that state and replace the
producer instead (this once stopped a normalizer in the broker-outage test).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError

from shared.kafka.runtime import _cannot_abort

pytestmark = [pytest.mark.unit, pytest.mark.asyncio]


async def test_a_fatal_transaction_cannot_be_aborted() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", transactional_id="t", enable_idempotence=True)
    try:
        manager: Any = producer._txn_manager  # type: ignore[attr-defined]  # aiokafka's, not public
        manager.set_pid_and_epoch(1, 0)
        manager.begin_transaction()
        assert not _cannot_abort(producer)
        manager.fatal_error(KafkaConnectionError("sender died"))  # what the sender's done-callback does
        assert _cannot_abort(producer)
        with pytest.raises(AssertionError, match="Invalid state transition"):
            await producer.abort_transaction()
        with pytest.raises(KafkaConnectionError):
            await manager.wait_for_transaction_end()  # the transaction ended in the sender's error
    finally:
        await producer.stop()


async def test_a_plain_producer_is_not_in_a_transaction_state() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9")
    try:
        assert not _cannot_abort(producer)
    finally:
        await producer.stop()
