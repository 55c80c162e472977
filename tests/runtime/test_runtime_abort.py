"""A transaction the runtime cannot abort (``transaction_state.cannot_abort``), on aiokafka's real state machine.

A producer whose sender task died (a broker outage can end it) is in aiokafka's
fatal transaction state; ``abort_transaction`` then fails on an ``assert``, not
a ``KafkaError``, so the runtime must recognise that state and replace the
producer instead (this once stopped a normalizer in the broker-outage test).
The same holds for a commit under way (COMMITTING_TRANSACTION). A replacement
fences every producer of the partition's transactional id, so it happens only
while the group coordinator confirms that the partition is still this
instance's; otherwise the instance leaves the group (``LeaveGroup``).
"""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import KafkaConnectionError

from binlake.shared.config.settings import KafkaSettings, NormalizerSettings
from binlake.shared.kafka.assignment import LeaveGroup, PartitionState
from binlake.shared.kafka.runtime import Normalizer
from binlake.shared.kafka.transaction_state import cannot_abort

pytestmark = [pytest.mark.unit, pytest.mark.asyncio]


async def test_a_fatal_transaction_cannot_be_aborted() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", transactional_id="t", enable_idempotence=True)
    try:
        manager: Any = producer._txn_manager  # type: ignore[attr-defined]  # aiokafka's, not public
        manager.set_pid_and_epoch(1, 0)
        manager.begin_transaction()
        assert not cannot_abort(producer)
        manager.fatal_error(KafkaConnectionError("sender died"))  # what the sender's done-callback does
        assert cannot_abort(producer)
        with pytest.raises(AssertionError, match="Invalid state transition"):
            await producer.abort_transaction()
        with pytest.raises(KafkaConnectionError):
            await manager.wait_for_transaction_end()  # the transaction ended in the sender's error
    finally:
        await producer.stop()


async def test_a_plain_producer_is_not_in_a_transaction_state() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9")
    try:
        assert not cannot_abort(producer)
    finally:
        await producer.stop()


async def test_a_committing_transaction_cannot_be_aborted() -> None:
    producer = AIOKafkaProducer(bootstrap_servers="127.0.0.1:9", transactional_id="t", enable_idempotence=True)
    try:
        manager: Any = producer._txn_manager  # type: ignore[attr-defined]  # aiokafka's, not public
        manager.set_pid_and_epoch(1, 0)
        manager.begin_transaction()
        manager.committing_transaction()  # what commit_transaction does before it waits for the outcome
        assert cannot_abort(producer)
        with pytest.raises(AssertionError, match="Invalid state transition"):
            await producer.abort_transaction()
    finally:
        await producer.stop()


class _Made:
    """A producer factory that counts the producers made (a successor must not be made)."""

    def __init__(self) -> None:
        self.made: list[AIOKafkaProducer] = []

    def __call__(self, **options: Any) -> AIOKafkaProducer:
        producer = AIOKafkaProducer(**options)
        self.made.append(producer)
        return producer


def _normalizer(made: _Made) -> Normalizer:
    settings = NormalizerSettings(format="canal-json", input_topics=["in"], group_id="g")
    return Normalizer(settings, KafkaSettings(bootstrap_servers="127.0.0.1:9"), make_producer=made)


async def _committing(normalizer: Normalizer, tp: TopicPartition) -> PartitionState:
    producer = AIOKafkaProducer(
        bootstrap_servers="127.0.0.1:9", transactional_id=normalizer.transactional_id(tp), enable_idempotence=True
    )
    manager: Any = producer._txn_manager  # type: ignore[attr-defined]
    manager.set_pid_and_epoch(1, 0)
    manager.begin_transaction()
    manager.committing_transaction()
    state = PartitionState(producer)
    normalizer._partitions.states[tp] = state
    return state


@pytest.mark.parametrize("assigned_locally", [False, True])
async def test_abort_from_committing_replaces_only_a_partition_the_coordinator_confirms(assigned_locally: bool) -> None:
    """A commit whose outcome is unknown (committing) is not aborted but replaced; the successor is made only
    when the group coordinator confirms the partition is ours. Here no coordinator answers (an instance cut off,
    whose partition the group may have moved): the instance leaves the group instead, fencing nobody."""
    made = _Made()
    normalizer = _normalizer(made)
    tp = TopicPartition("in", 0)
    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9")
    if assigned_locally:
        consumer.assign([tp])  # the local assignment alone is no proof: it may be stale
    normalizer._consumer = normalizer._partitions.consumer = consumer
    state = await _committing(normalizer, tp)
    try:
        with pytest.raises(LeaveGroup, match="ownership_unconfirmed"):
            await normalizer._abort(tp, state)
        assert made.made == [], "a successor producer would fence the partition's new owner"
        assert state.producer._closed  # type: ignore[attr-defined]  # the old producer is not leaked
        assert tp not in normalizer._partitions.states  # never consumed without a producer
    finally:
        await state.producer.stop()
        await consumer.stop()


async def test_a_batch_on_a_fatal_producer_replaces_it_instead_of_beginning() -> None:
    """begin_transaction from aiokafka's fatal state (a sender that died between batches) fails on an assert;
    the batch replaces the producer first (and, unconfirmed here, leaves the group)."""
    from aiokafka import ConsumerRecord

    made = _Made()
    normalizer = _normalizer(made)
    tp = TopicPartition("in", 0)
    consumer = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:9")
    normalizer._consumer = normalizer._partitions.consumer = consumer
    state = await _committing(normalizer, tp)
    manager: Any = state.producer._txn_manager  # type: ignore[attr-defined]
    manager.fatal_error(KafkaConnectionError("sender died"))
    with pytest.raises(KafkaConnectionError):
        await manager.wait_for_transaction_end()
    record: ConsumerRecord[bytes, bytes] = ConsumerRecord(  # type: ignore[call-arg]
        "in", 0, 0, 0, 0, None, b"{}", None, 0, 2, ()
    )
    try:
        with pytest.raises(LeaveGroup):
            await normalizer._process(tp, [record])
        assert made.made == []
    finally:
        await state.producer.stop()
        await consumer.stop()
