"""The normalizer runtime: vendor topics in, canonical events out, exactly once.

One runtime runs every parser. Per input partition, each batch is one Kafka
transaction that holds the canonical events (unified topic), the dead letters
(dead-letter topic) and the consumed offsets (``send_offsets_to_transaction``),
so either all of a batch's effects become visible to ``read_committed`` readers
or none do.

Zombie fencing without KIP-447. aiokafka cannot send consumer group metadata
with the offsets, so the broker cannot fence a stale group member by
generation. binlake uses the pre-KIP-447 design (Kafka Streams' "eos-alpha"):
one transactional producer per input partition, with ``transactional.id =
<group_id>.<topic>.<partition>``. Whoever is assigned a partition first starts
that producer, which makes the transaction coordinator bump the id's epoch:
any older producer with the same id (a zombie that lost the partition in a
rebalance but does not know yet) is fenced, and its open transaction is
aborted or completed before ``init_transactions`` returns. Only then does the
new owner read the partition's committed offset and seek to it, so it starts
exactly after the last committed batch. A fenced zombie's commit fails with
``ProducerFenced``; it drops the partition without committing anything.

Failures: a broker error inside a batch aborts its transaction and rewinds the
partition to the batch's first offset, then the loop backs off (exponential,
capped) and retries; a producer that can no longer abort is replaced (which
aborts the open transaction on the broker), but only while the group
coordinator confirms the partition is still ours; otherwise the instance leaves
the group and joins again (shared/kafka/assignment.py). SIGTERM finishes the
open batch (commit or abort) and leaves the group; nothing partial is ever
committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.errors import InvalidProducerEpoch, KafkaError, ProducerFenced

from shared import fastlane, native
from shared.codec import avro
from shared.config.settings import KafkaSettings, NormalizerSettings, TableRule
from shared.errors import ConfigError
from shared.event.model import ChangeEvent
from shared.kafka.assignment import LeaveGroup, Listener, Partitions, PartitionState, ProducerFactory
from shared.kafka.client import connection_kwargs
from shared.kafka.records import dead_letter_headers, event_key, partition_for
from shared.metrics.http import HealthServer
from shared.metrics.normalizer import NormalizerMetrics
from shared.parsing import registry
from shared.parsing.context import ParseContext, zone
from shared.parsing.errors import INTERNAL
from shared.parsing.result import Parsed, Rejected

log = logging.getLogger("binlake.normalizer")


@dataclass
class BatchResult:
    consumed: int = 0
    events: int = 0
    dead_letters: int = 0


@dataclass
class _Tally:
    """One batch's metric counts, published after its transaction commits."""

    controls: Counter[str] = field(default_factory=Counter)
    filtered: Counter[str] = field(default_factory=Counter)
    events: Counter[tuple[str, str]] = field(default_factory=Counter)
    last_seen: dict[str, int] = field(default_factory=dict)
    lane_taken: int = 0
    lane_declined: int = 0

    def seen(self, table: str, ts_ms: int) -> None:
        if ts_ms > self.last_seen.get(table, -(2**63)):
            self.last_seen[table] = ts_ms


@dataclass
class Normalizer:
    settings: NormalizerSettings
    kafka: KafkaSettings
    metrics: NormalizerMetrics = field(default_factory=NormalizerMetrics)
    make_producer: ProducerFactory = AIOKafkaProducer
    """Makes the partitions' producers (a seam for tests that inject producer faults)."""

    def __post_init__(self) -> None:
        self.parser = registry.get(self.settings.format)
        options: dict[str, Any] = dict(self.settings.format_options)
        if self.settings.avro_schema_file:
            try:
                options["avro_schema"] = orjson.loads(Path(self.settings.avro_schema_file).read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                raise ConfigError(f"BINLAKE_AVRO_SCHEMA_FILE: cannot read a JSON Avro schema: {exc}") from exc
        self._base_ctx = ParseContext(source_timezone=zone(self.settings.source_timezone), options=options)
        # The native fast lane, where this format has one: same records, much less CPU (shared/fastlane).
        self._lane = (
            fastlane.lane_for(self.settings.format, self._base_ctx, self.settings.topic_tables)
            if self.settings.fast_lane
            else None
        )
        self._contexts: dict[str, ParseContext] = {}
        self._include = [TableRule(pattern=p).regex() for p in self.settings.include_tables]
        self._exclude = [TableRule(pattern=p).regex() for p in self.settings.exclude_tables]
        self._lock = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._consumer: AIOKafkaConsumer | None = None
        self.health = HealthServer(self.metrics.registry)
        self._client = connection_kwargs(self.kafka)
        self._partitions = Partitions(
            group_id=self.settings.group_id,
            producer_options={
                "enable_idempotence": True,
                "partitioner": partition_for,
                "linger_ms": 5,
                "max_batch_size": 256 * 1024,
                "max_request_size": 16 * 1024 * 1024,
                "compression_type": None if self.settings.compression == "none" else self.settings.compression,
                "transaction_timeout_ms": self.settings.transaction_timeout_ms,
                **self._client,
            },
            make_producer=self.make_producer,
            metrics=self.metrics,
            ownership_timeout_s=self.settings.session_timeout_ms / 1000,
        )

    # ---------------------------------------------------------------- control

    def stop(self) -> None:
        """Ask the loop to finish its open batch and leave (SIGTERM handler)."""
        self._stopping.set()

    def transactional_id(self, tp: TopicPartition) -> str:
        return self._partitions.transactional_id(tp)

    def _context(self, topic: str) -> ParseContext:
        ctx = self._contexts.get(topic)
        if ctx is None:
            table = self.settings.topic_tables.get(topic)
            ctx = ParseContext(
                topic=topic,
                source_table=table,
                source_timezone=self._base_ctx.source_timezone,
                options=self._base_ctx.options,
            )
            self._contexts[topic] = ctx
        return ctx

    # ---------------------------------------------------------------- batches

    def _wanted(self, event: ChangeEvent) -> bool:
        if not self._include and not self._exclude:
            return True
        return self._wanted_table(f"{event.source.database or ''}.{event.source.table or ''}")

    def _wanted_table(self, name: str) -> bool:
        """The include/exclude rules on a ``database.table`` name."""
        if self._include and not any(rule.match(name) for rule in self._include):
            return False
        return not any(rule.match(name) for rule in self._exclude)

    async def _process(self, tp: TopicPartition, records: list[ConsumerRecord[bytes, bytes]]) -> BatchResult:
        state = self._partitions.states.get(tp)
        if state is None:
            return BatchResult()  # not ours (any more): the next owner processes these
        records = [record for record in records if record.offset >= state.next_offset]
        if not records:
            return BatchResult()
        if _transaction_state(state.producer) not in _CAN_BEGIN:
            # Its sender died between batches (aiokafka marked the transaction fatal): begin_transaction
            # would fail on an assert. The replacement rewinds; the next poll fetches these records again.
            await self._partitions.replace(tp, state, f"its transaction state is {_transaction_state(state.producer)}")
            return BatchResult()
        result = BatchResult(consumed=len(records))
        producer = state.producer
        settings = self.settings
        metrics = self.metrics
        # One context per batch, moved from record to record: parsing is
        # synchronous and parsers copy the coordinates they keep (Origin), so
        # this saves an allocation per record at no risk.
        ctx = self._context(tp.topic).at(tp.topic, tp.partition, records[0].offset)
        started = time.perf_counter()
        sends: list[asyncio.Future[Any]] = []
        tally = _Tally()
        try:
            await producer.begin_transaction()
            lane = self._lane
            rules = bool(self._include or self._exclude)
            send = producer.send
            output_topic = settings.output_topic
            # The lane's records name their partition (the producer's own partitioner, partition_for, over
            # the same list): aiokafka then skips rebuilding the topic's partition lists for every record.
            known = producer.client.cluster.partitions_for_topic(output_topic)
            partitions = list(known) if known else None
            for record in records:
                raw = record.value if record.value is not None else b""
                if lane is not None:
                    # The fast lane's records are the Python path's, byte for byte (shared/fastlane).
                    taken = lane.parse(raw, tp.topic, tp.partition, record.offset)
                    if taken is not None:
                        tally.lane_taken += 1
                        table, op, ts_ms, keys_values = taken
                        rows = len(keys_values) // 2
                        if rules and not self._wanted_table(table):
                            tally.filtered[table] += rows
                            continue
                        tally.events[(table, op)] += rows
                        if ts_ms is not None:
                            tally.seen(table, ts_ms)
                        for i in range(0, 2 * rows, 2):
                            key = keys_values[i]
                            at = None if partitions is None else partition_for(key, partitions, partitions)
                            sends.append(await send(output_topic, keys_values[i + 1], key=key, partition=at))
                        result.events += rows
                        continue
                    tally.lane_declined += 1
                ctx.offset = record.offset
                outcome = self.parser(raw, ctx)
                if isinstance(outcome, Parsed):
                    kept: list[ChangeEvent] = []
                    dropped: list[ChangeEvent] = []
                    for event in outcome.events:  # the table rules, applied once per event
                        (kept if self._wanted(event) else dropped).append(event)
                    try:
                        encoded = [(event, avro.encode(event)) for event in kept]
                    except (TypeError, ValueError, OverflowError) as exc:
                        outcome = Rejected(INTERNAL, f"event not encodable: {type(exc).__name__}: {exc}")
                    else:
                        self._account(outcome, kept, dropped, tally)
                        for event, body in encoded:
                            sends.append(await producer.send(settings.output_topic, body, key=event_key(event)))
                        result.events += len(encoded)
                        continue
                headers = dead_letter_headers(
                    topic=tp.topic,
                    partition=tp.partition,
                    offset=record.offset,
                    format_id=settings.format,
                    code=outcome.code,
                    reason=outcome.reason,
                    parser_version=self.parser.version,
                )
                sends.append(await producer.send(settings.dlq_topic, raw, key=record.key, headers=headers))
                metrics.dead_lettered.labels(tp.topic, outcome.code).inc()
                result.dead_letters += 1
            await asyncio.gather(*sends)
            await producer.send_offsets_to_transaction({tp: records[-1].offset + 1}, settings.group_id)
            await producer.commit_transaction()
            state.next_offset = records[-1].offset + 1
        except (ProducerFenced, InvalidProducerEpoch):
            # A newer producer of the partition's id exists (a new owner), or the coordinator aborted a batch
            # open past BINLAKE_TRANSACTION_TIMEOUT_MS and bumped the epoch (no new owner, no rebalance coming).
            # Either way the partition must not sit skipped: a new producer (init, rewind) if the coordinator
            # confirms it is still ours, else the instance leaves the group and the group decides.
            metrics.aborts.labels("fenced").inc()
            log.warning("producer fenced", extra={"partition": f"{tp.topic}:{tp.partition}"})
            await self._partitions.replace(tp, state, "it was fenced")
            return BatchResult()
        except (TimeoutError, KafkaError, OSError) as exc:
            metrics.aborts.labels(type(exc).__name__).inc()
            await self._abort(tp, state)
            raise
        metrics.transactions.inc()
        self._publish(tally)
        metrics.consumed.labels(tp.topic).inc(result.consumed)
        metrics.produced.labels(settings.output_topic).inc(result.events)
        metrics.batch_seconds.observe(time.perf_counter() - started)
        metrics.batch_size.observe(result.consumed)
        return result

    def _account(self, outcome: Parsed, kept: list[ChangeEvent], dropped: list[ChangeEvent], tally: _Tally) -> None:
        """Count one accepted message into the batch's tally (published to metrics once per batch).

        ``kept`` and ``dropped`` split ``outcome.events`` by the table rules.
        """
        if outcome.control is not None and not outcome.events:
            tally.controls[outcome.control] += 1
        for heartbeat in outcome.heartbeats:
            tally.seen(heartbeat.table or "*", heartbeat.ts_ms)
        for event in dropped:
            tally.filtered[f"{event.source.database or ''}.{event.source.table or ''}"] += 1
        for event in kept:
            table = f"{event.source.database or ''}.{event.source.table or ''}"
            tally.events[(table, event.op)] += 1
            if event.ts_ms is not None:
                tally.seen(table, event.ts_ms)

    def _publish(self, tally: _Tally) -> None:
        # Prometheus label lookups cost about a microsecond each: once per batch, not per event.
        metrics = self.metrics
        for kind, count in tally.controls.items():
            metrics.controls.labels(kind).inc(count)
        for table, count in tally.filtered.items():
            metrics.filtered.labels(table).inc(count)
        for (table, op), count in tally.events.items():
            metrics.events.labels(table, op).inc(count)
        for table, ts_ms in tally.last_seen.items():
            metrics.source_last_seen.labels(table).set(ts_ms / 1000)
        if tally.lane_taken:
            metrics.fast_lane.labels("taken").inc(tally.lane_taken)
        if tally.lane_declined:
            metrics.fast_lane.labels("declined").inc(tally.lane_declined)

    async def _abort(self, tp: TopicPartition, state: PartitionState) -> None:
        """Undo a failed batch: abort its transaction and rewind to its first record.

        A producer whose transaction aiokafka cannot abort (committing, aborting, fatal: ``abort_transaction``
        would fail on an assert of its state machine, not a KafkaError, and stop the service) is replaced.
        """
        consumer = self._consumer
        assert consumer is not None
        if _cannot_abort(state.producer):
            await self._partitions.replace(tp, state, f"its transaction state is {_transaction_state(state.producer)}")
            return
        if _transaction_state(state.producer) in _OPEN:
            try:
                await asyncio.wait_for(state.producer.abort_transaction(), 30)
            except (TimeoutError, KafkaError, OSError):
                await self._partitions.replace(tp, state, "its abort failed")
                return
        consumer.seek(tp, state.next_offset)

    def _update_lag(self, batches: dict[TopicPartition, list[ConsumerRecord[bytes, bytes]]]) -> None:
        consumer = self._consumer
        assert consumer is not None
        for tp, records in batches.items():
            highwater = consumer.highwater(tp)
            if highwater is not None and records:
                self.metrics.lag.labels(tp.topic, str(tp.partition)).set(max(0, highwater - records[-1].offset - 1))

    # ---------------------------------------------------------------- loop

    async def run(self) -> None:
        settings = self.settings
        await self.health.start(settings.metrics_host, settings.metrics_port)
        backoff = 0.5
        try:
            while not self._stopping.is_set():
                try:
                    await self._consume_until_stopped()
                    return
                except (TimeoutError, KafkaError, OSError, LeaveGroup) as exc:
                    if isinstance(exc, LeaveGroup):
                        self.metrics.rejoins.labels(exc.cause).inc()
                        log.warning("leaving the group to join again", extra={"reason": str(exc), "backoff_s": backoff})
                    else:
                        self.metrics.broker_errors.labels(type(exc).__name__).inc()
                        log.warning("broker error, backing off", extra={"error": repr(exc), "backoff_s": backoff})
                    self.health.ready = False
                    await self._shutdown_clients()
                    self.health.beat()  # backing off is alive: a restart would not help
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._stopping.wait(), backoff)
                    backoff = min(backoff * 2, settings.retry_backoff_max_s)
        finally:
            await self._shutdown_clients()
            await self.health.stop()

    async def _consume_until_stopped(self) -> None:
        settings = self.settings
        consumer = AIOKafkaConsumer(
            group_id=settings.group_id,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=4 * 1024 * 1024,
            session_timeout_ms=settings.session_timeout_ms,
            heartbeat_interval_ms=max(500, settings.session_timeout_ms // 4),
            **self._client,
        )
        self._consumer = self._partitions.consumer = consumer
        self._partitions.failed = None
        consumer.subscribe(settings.input_topics, listener=Listener(self._partitions, self._lock))
        await consumer.start()
        self.health.ready = True
        compiled = native.status()
        _freeze_startup_objects()
        log.info(
            "consuming",
            extra={
                "topics": settings.input_topics,
                "format": settings.format,
                # The pure-Python build works the same at about half the speed: say which this is.
                "compiled_modules": f"{sum(compiled.values())}/{len(compiled)}",
                "fast_lane": self._lane is not None,
            },
        )
        while not self._stopping.is_set():
            self.health.beat()
            batches = await consumer.getmany(timeout_ms=settings.batch_max_ms, max_records=settings.batch_max_messages)
            if self._partitions.failed is not None:
                raise LeaveGroup("assignment_failed", self._partitions.failed)
            if not batches:
                continue
            async with self._lock:
                # Every partition's batch finishes (commits or aborts) before an
                # error propagates, so no transaction is left running unseen.
                results = await asyncio.gather(
                    *(self._process(tp, records) for tp, records in batches.items()), return_exceptions=True
                )
            for outcome in results:
                if isinstance(outcome, BaseException):
                    raise outcome
            self._update_lag(batches)

    async def _shutdown_clients(self) -> None:
        async with self._lock:
            await self._partitions.close(list(self._partitions.states))
        # Outside the lock: stopping the consumer leaves the group, which calls
        # the rebalance listener, which takes the lock.
        consumer, self._consumer = self._consumer, None
        self._partitions.consumer = None
        if consumer is not None:
            with contextlib.suppress(KafkaError, OSError):
                await consumer.stop()


_frozen = False


def _freeze_startup_objects() -> None:
    """Keep start-up's objects out of the garbage collector's full passes, once per process.

    Everything made during start-up (modules, settings, clients) lives as long as
    the service; full collections would walk it again and again while batches
    allocate (``gc.freeze``, as CPython's documentation suggests for servers).
    Only the first start freezes: objects alive at a reconnect may still become
    garbage, and frozen garbage is never collected.
    """
    global _frozen
    if not _frozen:
        gc.freeze()
        _frozen = True


_OPEN = frozenset({"IN_TRANSACTION", "ABORTABLE_ERROR"})
"""aiokafka's transaction states that ``abort_transaction`` can leave (to ABORTING_TRANSACTION)."""
_CAN_BEGIN = frozenset({"READY", None})
"""States ``begin_transaction`` can leave (None: not a transactional producer)."""


def _transaction_state(producer: AIOKafkaProducer) -> str | None:
    """The name of the producer's transaction state in aiokafka's state machine (None: not transactional).

    aiokafka checks every transition with an ``assert``: from a state that does not allow it,
    ``abort_transaction`` and ``begin_transaction`` fail with an AssertionError, not a KafkaError. There
    is no public accessor; aiokafka's own transaction context reads ``_txn_manager`` the same way.
    """
    manager = getattr(producer, "_txn_manager", None)
    if manager is None or manager.transactional_id is None:
        return None
    return str(manager.state.name)


def _cannot_abort(producer: AIOKafkaProducer) -> bool:
    """Whether the producer has a transaction that ``abort_transaction`` cannot end: it must be replaced.

    COMMITTING_TRANSACTION (a commit whose outcome is unknown), ABORTING_TRANSACTION (an abort under way)
    and FATAL_ERROR (the sender task died, as a broker outage can make it: aiokafka marks the
    transaction fatal) all allow no abort.
    """
    return _transaction_state(producer) not in _OPEN | _CAN_BEGIN
