"""The changelog written without Spark: the unified topic (aiokafka) -> ``arrow_rows`` -> ``delta_rs``.

What the changelog query does in a Spark micro-batch, this does in the
Python process: read a batch of records (up to ``max_offsets_per_trigger``
records or ``trigger_interval_s`` seconds, whichever comes first), make their
changelog rows and rejects, append them with delta-rs, exactly once (the
offsets live in the tables' Delta logs, ``delta_rs``). Batches start
``trigger_interval_s`` apart, as a Spark processing-time trigger starts its
micro-batches: a batch that took longer than the interval is followed at once
by one holding what arrived meanwhile, so a slow batch (a busy machine) costs
its own time once, not its time plus a whole interval. A batch of a few
thousand events costs a fraction of a second on one core, so the changelog
stays seconds behind the topic where a Spark micro-batch costs seconds of
fixed work each; the Spark mirror query follows this changelog as it follows
its own (a Delta streaming source). The writer assigns itself every
partition of the topic (no consumer group): one writer per lake.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.kafka.client import connection_kwargs
from binlake.spark_sink.changelog.arrow_rows import KafkaRecord, changelog_batch
from binlake.spark_sink.changelog.delta_rs import DeltaRsChangelog, Written
from binlake.spark_sink.settings import SinkSettings

log = logging.getLogger("binlake.sink.writer")
DEFAULT_MAX_RECORDS = 50_000
"""Records per batch where ``max_offsets_per_trigger`` is not set."""


@dataclass(frozen=True, slots=True)
class WriterBatch:
    """One batch of the writer: its records, what it wrote, and when."""

    records: int
    written: Written
    started_at_s: float
    ended_at_s: float
    read_to: dict[int, int]
    """Per partition, the next offset to read after the batch."""
    latest: dict[int, int]
    """Per partition, the latest offset the brokers reported (the lag is ``latest - read_to``)."""


async def run(
    settings: SinkSettings,
    kafka: KafkaSettings,
    app_id: str,
    *,
    stop: asyncio.Event,
    on_batch: Callable[[WriterBatch], None] | None = None,
    on_tick: Callable[[], None] | None = None,
    until_caught_up: bool = False,
) -> None:
    """Write the topic's records to the changelog until ``stop`` is set (or, ``until_caught_up``, until every
    partition is read up to where it ended when the writer started: the available-now trigger). ``on_tick``
    is called each time the loop comes round (at least once a second while it is idle, after every batch): a
    liveness signal that stops when the writer is stuck."""
    store = DeltaRsChangelog(
        settings.changelog_uri(), settings.quarantine_uri(), app_id, partition_by=list(settings.changelog_partition_by)
    )
    consumer = AIOKafkaConsumer(
        **connection_kwargs(kafka),
        group_id=None,
        enable_auto_commit=False,
        isolation_level="read_committed",
        auto_offset_reset=settings.starting_offsets,
    )
    await consumer.start()
    try:
        partitions = await _partitions(kafka, settings.topic)
        assigned = [TopicPartition(settings.topic, p) for p in partitions]
        consumer.assign(assigned)
        resume = await asyncio.to_thread(store.resume, settings.topic, partitions)
        for tp in assigned:
            start = resume[tp.partition].read_from
            if start is not None:
                consumer.seek(tp, start)
            elif settings.starting_offsets == "earliest":
                await consumer.seek_to_beginning(tp)
            else:
                await consumer.seek_to_end(tp)
        ends = await consumer.end_offsets(assigned) if until_caught_up else {}
        max_records = settings.max_offsets_per_trigger or DEFAULT_MAX_RECORDS
        closed_at: float | None = None
        while not stop.is_set():
            if on_tick is not None:
                on_tick()
            if until_caught_up and await _caught_up(consumer, ends):
                return
            started = time.time()
            close_at = None if closed_at is None else closed_at + settings.trigger_interval_s
            records = await _next_batch(consumer, max_records, settings.trigger_interval_s, stop, close_at=close_at)
            if not records:
                continue
            closed_at = time.monotonic()
            batch = changelog_batch(records)
            written = await asyncio.to_thread(store.write, batch, records)
            log.info(
                "writer batch: %d records, %d changelog rows, %d quarantined, %d already written",
                len(records),
                written.changelog_rows,
                written.quarantined,
                written.skipped,
            )
            if on_batch is not None:
                read_to = {tp.partition: await consumer.position(tp) for tp in assigned}
                latest = {tp.partition: consumer.highwater(tp) or read_to[tp.partition] for tp in assigned}
                on_batch(WriterBatch(len(records), written, started, time.time(), read_to, latest))
    finally:
        await consumer.stop()


async def _partitions(kafka: KafkaSettings, topic: str) -> list[int]:
    """The topic's partitions, from the brokers' metadata (a consumer's own may not list a new topic yet)."""
    admin = AIOKafkaAdminClient(**connection_kwargs(kafka))
    await admin.start()
    try:
        described = await admin.describe_topics([topic])
    finally:
        await admin.close()
    found = sorted(int(p["partition"]) for d in described if d.get("topic") == topic for p in d.get("partitions") or [])
    if not found:
        raise RuntimeError(f"topic {topic} does not exist (or has no partitions): create it, then start the writer")
    return found


async def _caught_up(consumer: AIOKafkaConsumer, ends: dict[TopicPartition, int]) -> bool:
    for tp, end in ends.items():
        if await consumer.position(tp) < end:
            return False
    return True


async def _next_batch(
    consumer: AIOKafkaConsumer, max_records: int, interval_s: float, stop: asyncio.Event, *, close_at: float | None
) -> list[KafkaRecord]:
    """Records until ``max_records``, or until ``close_at`` (monotonic s; ``None``: ``interval_s`` after the
    first record), or ``stop``; none after a second without any. Past ``close_at`` (the batch before took
    longer than the interval, or the topic was idle) a batch is what the first poll that returns records
    holds: what arrived meanwhile, without waiting for more."""
    records: list[KafkaRecord] = []
    deadline = close_at
    while not stop.is_set() and len(records) < max_records:
        now = time.monotonic()
        if records and deadline is not None and now >= deadline:
            break
        wait_s = 1.0 if deadline is None or now >= deadline else min(1.0, deadline - now)
        got = await consumer.getmany(timeout_ms=max(1, int(wait_s * 1000)), max_records=max_records - len(records))
        for messages in got.values():
            records += [_record(m) for m in messages]
        if not records:
            break  # idle: the caller looks at ``stop`` (and whether it has caught up) before asking again
        if deadline is None:
            deadline = time.monotonic() + interval_s
    # A partition's records in offset order, partitions one after the other: as ``DeltaRsChangelog.write`` reads.
    return sorted(records, key=lambda r: (r.topic, r.partition, r.offset))


def _record(message: Any) -> KafkaRecord:
    return KafkaRecord(message.topic, message.partition, message.offset, message.timestamp, message.key, message.value)
