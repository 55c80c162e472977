"""The input partitions a normalizer owns: each one's transactional producer, fenced and rewound.

A partition is consumed only once its producer has started (``init_transactions``
fences any older owner and settles its open transaction) and the consumer has been
rewound to the partition's committed offset (docs/exactly-once.md).

An assignment does that for every partition it brings, or for none. aiokafka logs
what a rebalance listener raises and carries on as if the assignment had worked: a
partition whose producer failed to start would be fetched without a producer (its
records skipped until the next rebalance), and those started before it would not be
rewound. So a failed assignment stops the producers it started, and the listener
records the failure (``Partitions.failed``): the run loop then leaves the group and
joins again after a back-off, and until then processes nothing (a partition without a
producer is never processed).

A producer that cannot go on (its transaction is in a state aiokafka cannot abort
from, or it was fenced) is replaced by a new one with the same transactional id,
whose ``init_transactions`` fences it and aborts its open transaction on the broker.
That fences *every* other producer of the id, so it is done only while the group
coordinator confirms that this instance still owns the partition; otherwise the
instance leaves the group and joins again (``LeaveGroup``), and the group decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.abc import ConsumerRebalanceListener
from aiokafka.errors import KafkaError

from binlake.shared.kafka.closing import close_producer
from binlake.shared.kafka.produce_errors import Treatment
from binlake.shared.kafka.progress import Progress
from binlake.shared.metrics.normalizer import NormalizerMetrics

log = logging.getLogger("binlake.normalizer")

ProducerFactory = Callable[..., AIOKafkaProducer]
"""Makes a partition's producer from aiokafka keyword arguments (``AIOKafkaProducer``; tests inject faults)."""


def transactional_id(group_id: str, tp: TopicPartition) -> str:
    """``<group_id>:<topic>:<partition>``: one id per input partition, never another group's.

    Topic names hold only ``[a-zA-Z0-9._-]``, so the id splits back from the right into exactly
    these parts, whatever the group id holds (dots or colons). The former ``<group>.<topic>.<partition>``
    let group ``a.b`` on topic ``c`` and group ``a`` on topic ``b.c`` share an id, so each fenced the
    other's producer. A changed id starts a new producer lineage: upgrading from the old ids, stop every
    old instance before a new one starts (docs/operations.md, "Upgrades").
    """
    return f"{group_id}:{tp.topic}:{tp.partition}"


class LeaveGroup(Exception):
    """The instance must leave the consumer group and join again (the run loop does it after a back-off)."""

    def __init__(self, cause: str, detail: str) -> None:
        super().__init__(f"{cause}: {detail}")
        self.cause = cause
        """A fixed word for the metric label: assignment_failed, ownership_unconfirmed."""


@dataclass
class PartitionState:
    producer: AIOKafkaProducer
    next_offset: int = 0
    """The first offset not yet committed: records below it are never processed again."""
    treatments: dict[int, Treatment] = field(default_factory=dict)
    """Input offsets some of whose records Kafka refused, and what the next passes do about them."""


@dataclass
class Partitions:
    """The owned partitions (``states``) and what starts, rewinds, replaces and stops their producers."""

    group_id: str
    producer_options: dict[str, Any]
    make_producer: ProducerFactory
    metrics: NormalizerMetrics
    ownership_timeout_s: float = 10.0
    consumer: AIOKafkaConsumer | None = None
    states: dict[TopicPartition, PartitionState] = field(default_factory=dict)
    progress: Progress | None = None
    """The partitions' stall clocks: an assignment drops those of partitions now owned elsewhere."""
    failed: str | None = None
    """Why the last assignment failed (the run loop leaves the group when set)."""
    on_brokers: contextlib.AbstractContextManager[None] = field(default_factory=contextlib.nullcontext)
    """Entered around every wait on the brokers (the normalizer's ``Liveness``): a producer's start can wait on
    the transaction coordinator for as long as it is away, under the lock the consume loop needs."""
    close_within: Callable[[], float] = lambda: 30.0
    """How long a producer being let go may wait on the brokers to stop (shared/kafka/closing.py): the normalizer's
    BINLAKE_STOP_TIMEOUT_S, or what is left of it once a stop is asked."""

    def transactional_id(self, tp: TopicPartition) -> str:
        return transactional_id(self.group_id, tp)

    async def open(self, assigned: Iterable[TopicPartition]) -> None:
        """Start and rewind every assigned partition, or (raising) none: a failure stops those started."""
        fresh = [tp for tp in assigned if tp not in self.states]
        started: dict[TopicPartition, PartitionState] = {}
        try:
            for tp in fresh:
                started[tp] = await self._start(tp)
        except BaseException:
            for state in started.values():
                await self._stop(state.producer)
            raise
        self.states.update(started)
        if self.progress is not None:
            self.progress.assigned(self.states)
        self.metrics.assigned.set(len(self.states))
        log.info("partitions assigned", extra={"partitions": [f"{tp.topic}:{tp.partition}" for tp in fresh]})

    async def close(self, revoked: Iterable[TopicPartition]) -> None:
        revoked = list(revoked)
        leaving = [state for state in (self.states.pop(tp, None) for tp in revoked) if state is not None]
        # Side by side: in an outage each may wait its whole time limit, which one after the other would multiply.
        await asyncio.gather(*(self._stop(state.producer) for state in leaving))
        for tp in revoked:
            # The new owner reports this partition's lag now: no stale series here.
            with contextlib.suppress(KeyError):
                self.metrics.lag.remove(tp.topic, str(tp.partition))
        self.metrics.assigned.set(len(self.states))

    async def replace(self, tp: TopicPartition, state: PartitionState, why: str) -> None:
        """Replace the partition's producer: its successor's init_transactions aborts the open transaction
        on the broker, and the partition restarts from its committed offset.

        Raises ``LeaveGroup`` when the coordinator does not confirm that the partition is still ours: the
        successor would fence the producer of the owner the group moved the partition to.
        """
        log.warning("replacing producer", extra={"partition": f"{tp.topic}:{tp.partition}", "reason": why})
        await self._stop(state.producer)
        # Without a producer until its successor has started: never processed with the stopped one.
        self.states.pop(tp, None)
        if not await self.owned(tp):
            raise LeaveGroup("ownership_unconfirmed", f"{tp.topic}:{tp.partition}: a producer to replace ({why})")
        successor = await self._start(tp)
        successor.treatments = state.treatments  # what refusals taught holds for the successor too
        self.states[tp] = successor

    async def owned(self, tp: TopicPartition) -> bool:
        """Whether the group coordinator confirms, now, that ``tp`` is assigned to this instance.

        The local assignment can be stale (an instance paused past its session timeout has lost its
        partitions without knowing), so a heartbeat asks the coordinator: it succeeds only for a member of
        the current generation with no rebalance under way, the generation whose assignment we hold.
        aiokafka has no public call for this; its own heartbeat is the one used (it also starts a rejoin
        when the answer says the member is gone).
        """
        consumer = self.consumer
        if consumer is None or tp not in consumer.assignment():
            return False
        coordinator: Any = getattr(consumer, "_coordinator", None)
        if coordinator is None or not hasattr(coordinator, "_do_heartbeat"):
            return False
        try:
            with self.on_brokers:
                alive = await asyncio.wait_for(coordinator._do_heartbeat(), self.ownership_timeout_s)
        except (TimeoutError, KafkaError, OSError):
            return False
        rejoining = coordinator._rejoin_needed_fut.done()
        return bool(alive) and not rejoining and tp in consumer.assignment()

    async def _start(self, tp: TopicPartition) -> PartitionState:
        """A started producer (fencing older ones) and the consumer rewound to the committed offset."""
        producer = self.make_producer(transactional_id=self.transactional_id(tp), **self.producer_options)
        try:
            # start() runs init_transactions: fences any zombie owner of this
            # partition and settles its open transaction before we read offsets.
            with self.on_brokers:
                await producer.start()
                state = PartitionState(producer)
                await self._rewind(tp, state)
        except BaseException:
            await self._stop(producer)  # a producer that failed to start still holds connections
            raise
        return state

    async def _stop(self, producer: AIOKafkaProducer) -> None:
        # A producer being let go may be fenced or cut off: its stop must not stop the caller, nor hold it for the
        # whole of an outage (its batches would wait for the brokers: shared/kafka/closing.py).
        with self.on_brokers:
            await close_producer(producer, self.close_within())

    async def _rewind(self, tp: TopicPartition, state: PartitionState) -> None:
        """Seek the partition to its committed offset (the start of uncommitted work).

        The offset is also kept as the partition's ``next_offset`` guard: records
        the fetcher already buffered from an older position (it starts fetching
        before the assignment callback has run) are dropped, not processed twice.
        """
        consumer = self.consumer
        assert consumer is not None
        committed = await consumer.committed(tp)
        if committed is None:
            committed = (await consumer.beginning_offsets([tp]))[tp]
        consumer.seek(tp, committed)
        state.next_offset = committed


class Listener(ConsumerRebalanceListener):
    """Opens and closes partitions in rebalances, under the lock that batches hold (a revocation waits
    for the batch in flight to commit or abort)."""

    def __init__(self, partitions: Partitions, lock: asyncio.Lock) -> None:
        self.partitions = partitions
        self.lock = lock

    async def on_partitions_revoked(self, revoked: list[TopicPartition]) -> None:
        async with self.lock:
            await self.partitions.close(revoked)

    async def on_partitions_assigned(self, assigned: list[TopicPartition]) -> None:
        async with self.lock:
            try:
                await self.partitions.open(assigned)
            except Exception as exc:  # noqa: BLE001 - aiokafka would log it and go on as if assigned
                self.partitions.failed = f"{type(exc).__name__}: {exc}"
                log.error("assignment failed: leaving the group", extra={"error": self.partitions.failed})
