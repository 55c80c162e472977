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
<group_id>:<topic>:<partition>``. Whoever is assigned a partition first starts
that producer, which makes the transaction coordinator bump the id's epoch:
any older producer with the same id (a zombie that lost the partition in a
rebalance but does not know yet) is fenced, and its open transaction is
aborted or completed before ``init_transactions`` returns. Only then does the
new owner read the partition's committed offset and seek to it, so it starts
exactly after the last committed batch. A fenced zombie's commit fails with
``ProducerFenced``; it commits nothing, and the group coordinator, asked
whether the partition is still its own, says no: it leaves the group.

Failures: a broker error inside a batch aborts its transaction and rewinds the
partition to the batch's first offset, then the loop backs off (exponential,
capped, and from the first pause again once a batch commits:
shared/kafka/backoff.py) and retries; a record Kafka will never accept (too large, invalid)
dead-letters its input message instead (shared/kafka/produce_errors.py); a
producer that can no longer abort is replaced (which aborts the open
transaction on the broker), but only while the group coordinator confirms the
partition is still ours; otherwise the instance leaves the group and joins
again (shared/kafka/assignment.py). A partition whose input waits too long for
a commit is stalled: /readyz fails (shared/kafka/progress.py). Every await on the
brokers is marked (``with self.liveness``): a loop that waits on them past
BINLAKE_LIVENESS_TIMEOUT_S stays live but is not ready, any other loop that long
without a poll fails /healthz (shared/metrics/liveness.py). A broker error
that is the configuration's (credentials refused, a broker certificate not
trusted: shared/kafka/access.py) stops the service with what to fix instead
of backing off forever. SIGTERM finishes
the open batch (commit or abort) and leaves the group; nothing partial is ever
committed. A stop is bounded (BINLAKE_STOP_TIMEOUT_S) in every state: in an
outage the batch waiting on the brokers is left open, for its transaction
coordinator to abort after BINLAKE_TRANSACTION_TIMEOUT_MS, and the clients are
closed without the brokers (shared/kafka/closing.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition
from aiokafka.errors import InvalidProducerEpoch, KafkaError, ProducerFenced

from binlake.shared import native
from binlake.shared.config.settings import KafkaSettings, NormalizerSettings
from binlake.shared.errors import ConfigError
from binlake.shared.kafka import access, closing, leftovers
from binlake.shared.kafka.assignment import LeaveGroup, Listener, Partitions, PartitionState, ProducerFactory
from binlake.shared.kafka.backoff import Backoff
from binlake.shared.kafka.client import connection_kwargs
from binlake.shared.kafka.letters import Letter, dead_letter
from binlake.shared.kafka.produce_errors import (
    REFUSED,
    DeadLetterRefused,
    Hit,
    RefusedRecords,
    Treatment,
    deliver_alone,
    learn,
    refused,
    settle,
    size,
)
from binlake.shared.kafka.progress import Progress
from binlake.shared.kafka.records import dead_letter_headers, partition_for, replayed_at
from binlake.shared.kafka.tally import Tally
from binlake.shared.kafka.transaction_state import CAN_BEGIN, OPEN, cannot_abort, transaction_state
from binlake.shared.metrics.liveness import Liveness
from binlake.shared.metrics.normalizer import NormalizerMetrics
from binlake.shared.metrics.readiness import NormalizerHealth
from binlake.shared.normalize import TableFilter, codec_for
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.result import Rejected

log = logging.getLogger("binlake.normalizer")


@dataclass
class BatchResult:
    consumed: int = 0
    events: int = 0
    dead_letters: int = 0


@dataclass
class Normalizer:
    settings: NormalizerSettings
    kafka: KafkaSettings
    metrics: NormalizerMetrics = field(default_factory=NormalizerMetrics)
    make_producer: ProducerFactory = AIOKafkaProducer
    """Makes the partitions' producers (a seam for tests that inject producer faults)."""

    def __post_init__(self) -> None:
        for format_id, target in self.settings.format_specs.items():
            try:
                registry.register(format_id, target)
            except ConfigError as exc:
                raise ConfigError(f"BINLAKE_FORMAT_SPECS: {exc}") from None
        options: dict[str, Any] = dict(self.settings.format_options)
        if self.settings.avro_schema_file:
            try:
                options["avro_schema"] = orjson.loads(Path(self.settings.avro_schema_file).read_bytes())
            except (OSError, orjson.JSONDecodeError) as exc:
                raise ConfigError(f"BINLAKE_AVRO_SCHEMA_FILE: cannot read a JSON Avro schema: {exc}") from exc
        # One route for every message: the format's parser, then the kernel (shared/normalize).
        self.codec = codec_for(
            self.settings.format,
            ParseContext(source_timezone=zone(self.settings.source_timezone), options=options),
            topic_tables=self.settings.topic_tables,
            tables=TableFilter.of(self.settings.include_tables, self.settings.exclude_tables),
        )
        self._lock = asyncio.Lock()
        self._stopping = asyncio.Event()
        self._consumer: AIOKafkaConsumer | None = None
        self._stop_deadline: float | None = None
        """When the stop asked for must be done (``time.monotonic``); None until one is asked for."""
        self._backoff = Backoff(self.settings.retry_backoff_max_s)
        self.metrics.cap_labels(self.settings.metrics_max_label_values)
        self._progress = Progress(self.settings.stall_threshold_s)
        self.liveness = Liveness(self.settings.liveness_timeout_s)
        """What the loop waits on: every await on the brokers runs inside ``with self.liveness``."""
        self.health = NormalizerHealth(
            self.metrics.registry,
            liveness=self.liveness,
            stalled=lambda: [f"{tp.topic}:{tp.partition}" for tp in self._progress.stalled()],
        )
        self.metrics.broker_wait.set_function(self.liveness.waited_s)
        self.metrics.stalls.watch(
            lambda: {(tp.topic, tp.partition): waited for tp, waited in self._progress.waits().items()},
            lambda: [(tp.topic, tp.partition) for tp in self._partitions.states],
            self.settings.stall_threshold_s,
        )
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
            progress=self._progress,
            on_brokers=self.liveness,
            close_within=self._close_budget,
        )

    # ---------------------------------------------------------------- control

    def stop(self) -> None:
        """Ask the loop to finish its open batch and leave (SIGTERM handler): ``run`` returns within
        BINLAKE_STOP_TIMEOUT_S, whatever the brokers do."""
        if self._stop_deadline is None:
            self._stop_deadline = time.monotonic() + self.settings.stop_timeout_s
        self._stopping.set()

    def _close_budget(self) -> float:
        """How long closing a client may wait on the brokers: until the stop's deadline less the time a forced
        close takes, or, before any stop, as long as a stop may take."""
        if self._stop_deadline is None:
            return self.settings.stop_timeout_s
        return max(0.0, self._stop_deadline - _forced_reserve(self.settings.stop_timeout_s) - time.monotonic())

    def transactional_id(self, tp: TopicPartition) -> str:
        return self._partitions.transactional_id(tp)

    # ---------------------------------------------------------------- batches

    async def _process(self, tp: TopicPartition, records: list[ConsumerRecord[bytes, bytes]]) -> BatchResult:
        state = self._partitions.states.get(tp)
        if state is None:
            self._progress.waiting(tp)  # not started: the rejoin that follows decides who processes these
            return BatchResult()
        records = [record for record in records if record.offset >= state.next_offset]
        if not records:
            return BatchResult()
        self._progress.waiting(tp)
        if transaction_state(state.producer) not in CAN_BEGIN:
            # Its sender died between batches (aiokafka marked the transaction fatal): begin_transaction
            # would fail on an assert. The replacement rewinds; the next poll fetches these records again.
            await self._partitions.replace(tp, state, f"its transaction state is {transaction_state(state.producer)}")
            return BatchResult()
        result = BatchResult(consumed=len(records))
        producer = state.producer
        settings = self.settings
        metrics = self.metrics
        started = time.perf_counter()
        sends: list[asyncio.Future[Any]] = []
        starts: list[int] = []
        """Per record, the index in ``sends`` of its first record: a refused send names its input message."""
        letters: set[int] = set()
        """Indexes in ``sends`` of dead letters."""
        treated = state.treatments
        tally = Tally()
        record = records[0]
        try:
            # Every await from begin_transaction to the commit is on the brokers (the producer's calls), and the
            # parsing between the sends holds the event loop, so no probe sees the mark while it runs: one mark
            # does what one per send would, without an enter and exit per record on the hot path.
            with self.liveness:
                await producer.begin_transaction()
                codec = self.codec
                send = producer.send
                output_topic = settings.output_topic
                # The records name their partition (the producer's own partitioner, partition_for, over the same
                # list): aiokafka then skips rebuilding the topic's partition lists for every record.
                known = producer.client.cluster.partitions_for_topic(output_topic)
                partitions = list(known) if known else None
                for record in records:
                    starts.append(len(sends))
                    if treated and record.offset in treated:
                        # Some of its records were refused before: everything ahead of it is delivered first, so its
                        # own records go alone and a refusal is surely theirs (shared/kafka/produce_errors.py).
                        await settle(sends, starts, records, letters)
                        await self._produce_alone(
                            tp, producer, record, treated[record.offset], tally=tally, result=result
                        )
                        continue
                    raw = record.value if record.value is not None else b""
                    # A message `binlake dlq replay` re-fed is read at its original coordinates.
                    replayed = replayed_at(record.headers, tp.topic) if record.headers else None
                    origin_partition, origin_offset = replayed or (tp.partition, record.offset)
                    normalized = codec(raw, tp.topic, origin_partition, origin_offset)
                    if isinstance(normalized, Rejected):
                        letter = self._letter(tp, record, normalized.code, normalized.reason, bare=False)
                        letters.add(len(sends))
                        sends.append(
                            await send(settings.dlq_topic, letter.value, key=letter.key, headers=letter.headers)
                        )
                        tally.letters[normalized.code] += 1
                        result.dead_letters += 1
                        continue
                    tally.accepted(normalized)
                    for _, _, _, values in normalized.rows:
                        for i in range(0, len(values), 2):
                            key = values[i]
                            at = None if partitions is None else partition_for(key, partitions, partitions)
                            sends.append(await send(output_topic, values[i + 1], key=key, partition=at))
                        result.events += len(values) // 2
                await settle(sends, starts, records, letters)
                await producer.send_offsets_to_transaction({tp: records[-1].offset + 1}, settings.group_id)
                await producer.commit_transaction()
            state.next_offset = records[-1].offset + 1
            self._progress.committed(tp)
            if self._backoff.succeeded():
                log.info("committing again after broker errors", extra={"partition": f"{tp.topic}:{tp.partition}"})
            sends.clear()  # all delivered and their results read (settle)
        except RefusedRecords as refusal:
            await self._refused(tp, state, refusal)
            return BatchResult()
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
            if refused(exc):  # raised by send() itself: the producer's own size check, record by record
                hit = Hit(letter=len(sends) in letters, alone=True, error=type(exc).__name__, size=size(record))
                await self._refused(tp, state, RefusedRecords({record.offset: hit}, by_broker=False))
                return BatchResult()
            metrics.aborts.labels(type(exc).__name__).inc()
            await self._abort(tp, state)
            raise
        finally:
            # A batch that failed before settle leaves sends whose errors no one reads (shared/kafka/leftovers.py).
            leftovers.consume(sends)
        if treated:
            for offset in [offset for offset in treated if offset < state.next_offset]:
                del treated[offset]
        metrics.transactions.inc()
        tally.publish(self.metrics, tp.topic)
        metrics.consumed.labels(tp.topic).inc(result.consumed)
        metrics.produced.labels(settings.output_topic).inc(result.events)
        metrics.batch_seconds.observe(time.perf_counter() - started)
        metrics.batch_size.observe(result.consumed)
        return result

    def _letter(
        self, tp: TopicPartition, record: ConsumerRecord[bytes, bytes], code: str, reason: str, *, bare: bool
    ) -> Letter:
        headers = dead_letter_headers(
            topic=tp.topic,
            partition=tp.partition,
            offset=record.offset,
            format_id=self.settings.format,
            code=code,
            reason=reason,
            parser_version=self.codec.version,
        )
        raw = record.value if record.value is not None else b""
        return dead_letter(record.key, raw, headers, max_value_bytes=self.settings.dlq_max_value_bytes, bare=bare)

    async def _produce_alone(
        self,
        tp: TopicPartition,
        producer: AIOKafkaProducer,
        record: ConsumerRecord[bytes, bytes],
        treatment: Treatment,
        *,
        tally: Tally,
        result: BatchResult,
    ) -> None:
        """Produce a message some of whose records were refused before, each record delivered before the next.

        Alone in its batch, a refused record is surely this message's: it is dead-lettered (or its letter
        goes bare) on the next pass.
        """
        if treatment.refusal is None:
            partition, offset = replayed_at(record.headers, tp.topic) or (tp.partition, record.offset)
            normalized = self.codec(record.value if record.value is not None else b"", tp.topic, partition, offset)
            if not isinstance(normalized, Rejected):
                tally.accepted(normalized)
                for key, value in normalized.pairs():
                    await deliver_alone(
                        producer, record, self.settings.output_topic, value=value, key=key, headers=None
                    )
                result.events += normalized.records
                return
            code, reason = normalized.code, normalized.reason
        else:
            code, reason = REFUSED, treatment.refusal
        letter = self._letter(tp, record, code, reason, bare=treatment.bare_letter)
        await deliver_alone(
            producer, record, self.settings.dlq_topic, value=letter.value, key=letter.key, headers=letter.headers
        )
        tally.letters[code] += 1
        result.dead_letters += 1

    async def _refused(self, tp: TopicPartition, state: PartitionState, refusal: RefusedRecords) -> None:
        """Kafka refused records for good: note which messages (``learn``), undo the batch, rewind.

        The next pass dead-letters what was surely refused and produces suspects alone. A broker's refusal
        leaves a gap in the producer's sequence numbers, so that producer is replaced, not just aborted.
        """
        self.metrics.aborts.labels(REFUSED).inc()
        learned = learn(state.treatments, refusal.hits, self.settings.output_topic)
        log.warning(
            "records refused for good",
            extra={
                "partition": f"{tp.topic}:{tp.partition}",
                "offsets": sorted(refusal.hits)[:20],
                "errors": sorted({hit.error for hit in refusal.hits.values()}),
            },
        )
        if refusal.by_broker:
            await self._partitions.replace(tp, state, "Kafka refused a record for good")
        else:
            await self._abort(tp, state)
        if not learned:
            raise DeadLetterRefused(f"{tp.topic}:{tp.partition}: {self.settings.dlq_topic} refused even a bare letter")

    async def _abort(self, tp: TopicPartition, state: PartitionState) -> None:
        """Undo a failed batch: abort its transaction and rewind to its first record.

        A producer whose transaction aiokafka cannot abort (committing, aborting, fatal: ``abort_transaction``
        would fail on an assert of its state machine, not a KafkaError, and stop the service) is replaced.
        """
        consumer = self._consumer
        assert consumer is not None
        if cannot_abort(state.producer):
            await self._partitions.replace(tp, state, f"its transaction state is {transaction_state(state.producer)}")
            return
        if transaction_state(state.producer) in OPEN:
            try:
                with self.liveness:
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
        """Consume until stopped; ``stop()`` makes it return within BINLAKE_STOP_TIMEOUT_S in every state."""
        settings = self.settings
        await self.health.start(settings.metrics_host, settings.metrics_port)
        serving = asyncio.create_task(self._serve(), name="binlake-normalizer-loop")
        try:
            await self._until_stopped(serving)
        finally:
            if not serving.done():  # run() itself was cancelled
                serving.cancel()
                await asyncio.wait({serving}, timeout=settings.stop_timeout_s)
            await self.health.stop()
        if not serving.cancelled():
            serving.result()  # what ended the loop: a configuration the brokers refuse, a letter no topic takes

    async def _serve(self) -> None:
        """The consume loop, its back-offs after broker errors, and (stopped or failed) closing its clients."""
        try:
            while not self._stopping.is_set():
                try:
                    await self._consume_until_stopped()
                    return
                except (TimeoutError, KafkaError, OSError, LeaveGroup) as exc:
                    self.health.ready = False
                    # Backing off waits for the brokers (a rejoin too: the group coordinator decides): alive, as a
                    # restart would not help, and not ready once it lasts.
                    with self.liveness:
                        await self._back_off(exc, self._backoff.failed())
        finally:
            await self._shutdown_clients()

    async def _until_stopped(self, serving: asyncio.Task[None]) -> None:
        """Wait for the loop to end; once a stop is asked, for BINLAKE_STOP_TIMEOUT_S at most.

        What can outlast it waits on the brokers: a batch's sends, commit or abort, a producer's start in a
        rebalance (under the lock the loop's own close needs), a client's stop. At the deadline (less the
        moment a forced close takes) the loop is cancelled and every client it leaves is closed without the
        brokers (shared/kafka/closing.py). A transaction left open is aborted by its coordinator after
        BINLAKE_TRANSACTION_TIMEOUT_MS (or by the partition's next producer): nothing partial is committed.
        """
        stop_asked = asyncio.create_task(self._stopping.wait())
        try:
            await asyncio.wait({serving, stop_asked}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop_asked.cancel()
        if serving.done():
            return
        deadline = self._stop_deadline if self._stop_deadline is not None else time.monotonic()
        timeout_s = self.settings.stop_timeout_s
        reserve = _forced_reserve(timeout_s)
        await asyncio.wait({serving}, timeout=max(0.0, deadline - reserve - time.monotonic()))
        if serving.done():
            return
        left_open = [
            f"{tp.topic}:{tp.partition}"
            for tp, state in self._partitions.states.items()
            if transaction_state(state.producer) not in CAN_BEGIN
        ]
        log.warning(
            "stop timed out: closing without the brokers",
            extra={
                "stop_timeout_s": timeout_s,
                "transactions_left_open": left_open,
                "aborted_by_coordinator_after_ms": self.settings.transaction_timeout_ms,
            },
        )
        serving.cancel()
        await asyncio.wait({serving}, timeout=reserve / 2)
        # Whatever the cancelled loop's own close did not reach (it may have been cut short in it).
        await self._shutdown_clients(locked=False)

    async def _back_off(self, exc: Exception, backoff: float) -> None:
        """Count the failure, close every client and wait ``backoff`` seconds (or until stopped)."""
        if isinstance(exc, LeaveGroup):
            self.metrics.rejoins.labels(exc.cause).inc()
            log.warning("leaving the group to join again", extra={"reason": str(exc), "backoff_s": backoff})
        else:
            self.metrics.broker_errors.labels(type(exc).__name__).inc()
            # aiokafka hides why a connection failed: a refused password or an untrusted broker
            # certificate never heals, so it ends the service (KafkaAccessError) rather than a back-off.
            await access.diagnose(self.kafka, timeout_s=min(10.0, self.settings.retry_backoff_max_s))
            log.warning("broker error, backing off", extra={"error": repr(exc), "backoff_s": backoff})
        await self._shutdown_clients()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stopping.wait(), backoff)

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
        with self.liveness:
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
            },
        )
        while not self._stopping.is_set():
            self.liveness.progressed()
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

    async def _shutdown_clients(self, *, locked: bool = True) -> None:
        """Stop the partitions' producers and the consumer (it leaves the group), each within the close budget.

        ``locked=False`` after a stop timed out: the lock may be held by a rebalance listener that waits on a
        coordinator, and the clients are closed without the brokers anyway.
        """
        if locked:
            async with self._lock:
                await self._partitions.close(list(self._partitions.states))
        else:
            await self._partitions.close(list(self._partitions.states))
        # Outside the lock: stopping the consumer leaves the group, which calls
        # the rebalance listener, which takes the lock.
        consumer, self._consumer = self._consumer, None
        self._partitions.consumer = None
        if consumer is not None:
            with self.liveness:
                await closing.close_consumer(consumer, self._close_budget())  # it leaves the group: the coordinator


def _forced_reserve(stop_timeout_s: float) -> float:
    """The part of the stop's time kept for closing without the brokers (ending tasks, closing sockets)."""
    return min(2 * closing.FORCED_S, stop_timeout_s / 4)


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
