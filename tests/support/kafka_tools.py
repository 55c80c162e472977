"""Small real-Kafka helpers for the integration tests (no mocks: a real broker)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterable

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from binlake.shared.kafka.topics import new_topics


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


async def create_topics(
    bootstrap: str, topics: dict[str, int], configs: dict[str, dict[str, str]] | None = None
) -> None:
    """Create ``topics`` (name -> partitions) as binlake's tools do: RF 3 and min ISR 2 on a cluster of three.

    ``configs``: topic configs by name, over those."""
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics(await new_topics(admin, topics, configs))
    finally:
        await admin.close()
    # Topic metadata reaches every listener a moment after creation.
    await asyncio.sleep(0.5)


async def produce(bootstrap: str, topic: str, items: Iterable[tuple[bytes | None, bytes]]) -> list[tuple[int, int]]:
    """Produce in order; return each message's (partition, offset)."""
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=5)
    await producer.start()
    try:
        futures = [await producer.send(topic, value, key=key) for key, value in items]
        written = await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return [(meta.partition, meta.offset) for meta in written]


async def read_all(
    bootstrap: str, topic: str, *, idle_ms: int = 1500, committed: bool = True
) -> list[ConsumerRecord[bytes, bytes]]:
    """Every committed (or, with ``committed=False``, every) record of ``topic``, in offset order."""
    consumer = AIOKafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        isolation_level="read_committed" if committed else "read_uncommitted",
        auto_offset_reset="earliest",
    )
    await consumer.start()
    out: list[ConsumerRecord[bytes, bytes]] = []
    try:
        while True:
            batches = await consumer.getmany(timeout_ms=idle_ms)
            if not batches:
                break
            for records in batches.values():
                out.extend(records)
    finally:
        await consumer.stop()
    out.sort(key=lambda r: (r.partition, r.offset))
    return out


async def written(bootstrap: str, topic: str, partitions: int) -> int:
    """How many records ``topic`` holds, counting those of open and aborted transactions."""
    return await _end_offsets_total(bootstrap, topic, partitions, "read_uncommitted")


async def open_transaction_records(bootstrap: str, topic: str, partitions: int) -> int:
    """Records behind the last stable offset: those of transactions still open (high watermarks minus
    the offsets a ``read_committed`` reader may read up to). A producer SIGKILLed inside a transaction
    leaves its records there until a new producer with its transactional id aborts them."""
    high = await written(bootstrap, topic, partitions)
    return high - await _end_offsets_total(bootstrap, topic, partitions, "read_committed")


async def _end_offsets_total(bootstrap: str, topic: str, partitions: int, isolation_level: str) -> int:
    """The sum of the partitions' end offsets as a reader at ``isolation_level`` sees them."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation_level)
    await consumer.start()
    try:
        return await _high_watermarks(consumer, topic, partitions)
    finally:
        await consumer.stop()


async def wait_written(bootstrap: str, topic: str, partitions: int, *, above: int, timeout_s: float = 60.0) -> int:
    """Wait until ``topic`` holds more than ``above`` records (committed or not); return the count."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_uncommitted")
    await consumer.start()
    try:
        deadline = asyncio.get_running_loop().time() + timeout_s
        while (count := await _high_watermarks(consumer, topic, partitions)) <= above:
            if asyncio.get_running_loop().time() > deadline:
                raise TimeoutError(f"nothing was written to {topic} within {timeout_s}s")
            await asyncio.sleep(0.02)
        return count
    finally:
        await consumer.stop()


async def _high_watermarks(consumer: AIOKafkaConsumer, topic: str, partitions: int) -> int:
    ends = await consumer.end_offsets([TopicPartition(topic, p) for p in range(partitions)])
    return sum(ends.values())


async def group_caught_up(bootstrap: str, group_id: str, topic: str, partitions: int) -> bool:
    """True when ``group_id`` has committed every input offset of ``topic``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group_id, enable_auto_commit=False)
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        ends = await consumer.end_offsets(tps)
        for tp in tps:
            committed = await consumer.committed(tp)
            if ends[tp] > 0 and (committed is None or committed < ends[tp]):
                return False
        return True
    finally:
        await consumer.stop()


async def wait_caught_up(
    bootstrap: str, group_id: str, topic: str, partitions: int, *, timeout_s: float = 120.0
) -> None:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not await group_caught_up(bootstrap, group_id, topic, partitions):
        if asyncio.get_running_loop().time() > deadline:
            raise TimeoutError(f"group {group_id} did not consume all of {topic} within {timeout_s}s")
        await asyncio.sleep(0.5)
