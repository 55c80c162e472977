"""The Kafka part of the demo: vendor topics -> normalizer processes -> unified topic -> sink process -> lake.

Runs against a broker that is up. Creates the topics, starts the real
``binlake sink`` and one real ``binlake normalizer`` per format (``fleet``),
produces every format's traffic (``traffic``), and follows the services'
``/metrics`` until the lake has caught up:

1. each normalizer's consumer group has committed every offset of its vendor
   topic (read from Kafka: a committed offset means the batch's transaction,
   events and dead letters included, is committed);
2. then the unified topic's committed events are counted once (a
   ``read_committed`` reader), and the sink's changelog must reach that count
   (``binlake_sink_changelog_rows`` + ``binlake_sink_quarantined_rows``);
3. then its mirror query must have applied as many (``binlake_sink_mirror_rows``).

Then it stops every service by pid and returns what the summary needs. A
service that exits early, or a stage that does not finish within the time
limit, ends the wait with an ``Abort`` naming the log to read.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from binlake.shared.cli.demo import scrape
from binlake.shared.cli.demo.fleet import Fleet, Service
from binlake.shared.cli.demo.progress import Progress, Snapshot
from binlake.shared.cli.demo.traffic import Traffic
from binlake.shared.devbroker.broker import free_port
from binlake.shared.errors import BinlakeError

UNIFIED: Final = "binlake.events"
DLQ: Final = "binlake.dlq"
VENDOR_PARTITIONS: Final = 3
UNIFIED_PARTITIONS: Final = 4
SINK_ENV: Final = {
    # Small data on a small machine: two cores, two shuffle partitions, a micro-batch every 2 s; the
    # mirror query every 10 s, so it MERGEs the tables a few times rather than every 2 s.
    "BINLAKE_SINK_MASTER": "local[2]",
    "BINLAKE_SINK_SHUFFLE_PARTITIONS": "2",
    "BINLAKE_SINK_TRIGGER_INTERVAL_S": "2",
    "BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S": "10",
    "BINLAKE_SINK_LOG_LEVEL": "ERROR",
    # Whole-stage code generation off: on a mirror's projection (every column's conversion from the value
    # union) it writes a method past the JVM's 64 KB limit, so Janino compiles for a minute per table and
    # batch, fails, and Spark falls back to the interpreted plan it could have run at once.
    "BINLAKE_SINK_SPARK_CONF": json.dumps(
        {
            "spark.default.parallelism": "2",
            "spark.sql.adaptive.enabled": "false",
            "spark.sql.codegen.wholeStage": "false",
            # The first mirror batch holds every format's tables at once: 1 GB of heap ran out (OutOfMemoryError).
            "spark.driver.memory": "3g",
        }
    ),
    # Every generated table's key is id; CKafka's messages name none, so the sink is told (docs/spark-sink.md).
    "BINLAKE_SINK_PRIMARY_KEYS": json.dumps({"*": ["id"]}),
}


class Abort(BinlakeError):
    """The pipeline could not finish: the message says what and where to look."""


@dataclass(slots=True)
class PipelineResult:
    sent: dict[str, int]
    unified_events: int
    normalizers: dict[str, scrape.NormalizerView]
    sink: scrape.SinkView
    stopped: dict[str, int | None] = field(default_factory=dict)
    """Exit code of each service after its stop (0: clean)."""


class Clock:
    """Named stages, timed back to back."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self._mark = self.started
        self.phases: list[tuple[str, float]] = []

    def lap(self, name: str) -> float:
        now = time.monotonic()
        took = now - self._mark
        self.phases.append((name, took))
        self._mark = now
        return took

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def normalizer_env(fmt: str, parse: dict[str, object], bootstrap: str, port: int, schemas: Path) -> dict[str, str]:
    env = {
        "BINLAKE_FORMAT": fmt,
        "BINLAKE_INPUT_TOPICS": f"vendor.{fmt}",
        "BINLAKE_OUTPUT_TOPIC": UNIFIED,
        "BINLAKE_DLQ_TOPIC": DLQ,
        "BINLAKE_GROUP_ID": f"demo-{fmt}",
        "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "BINLAKE_METRICS_PORT": str(port),
        "BINLAKE_METRICS_HOST": "127.0.0.1",
        "BINLAKE_LOG_LEVEL": "INFO",
    }
    options = parse.get("options")
    if isinstance(options, dict):
        env["BINLAKE_FORMAT_OPTIONS"] = json.dumps({k: str(v) for k, v in options.items() if k != "avro_schema"})
    if "avro_schema" in parse:
        schemas.mkdir(parents=True, exist_ok=True)
        schema_file = schemas / f"{fmt}.avsc"
        schema_file.write_text(json.dumps(parse["avro_schema"]))
        env["BINLAKE_AVRO_SCHEMA_FILE"] = str(schema_file)
    if "source_table" in parse:
        env["BINLAKE_TOPIC_TABLES"] = json.dumps({f"vendor.{fmt}": parse["source_table"]})
    return env


async def _create_topics(bootstrap: str, formats: list[str]) -> None:
    from aiokafka.admin import AIOKafkaAdminClient

    from binlake.shared.kafka.topics import new_topics

    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        # One replica on the demo's single broker; RF 3 and min ISR 2 on a cluster (shared/kafka/topics.py).
        partitions = {f"vendor.{fmt}": VENDOR_PARTITIONS for fmt in formats} | {UNIFIED: UNIFIED_PARTITIONS, DLQ: 1}
        await admin.create_topics(await new_topics(admin, partitions))
    finally:
        await admin.close()
    await asyncio.sleep(0.5)  # topic metadata reaches the listeners a moment after creation


async def _produce(bootstrap: str, traffic: dict[str, Traffic]) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, enable_idempotence=True, linger_ms=20)
    await producer.start()
    try:
        futures = []
        for item in traffic.values():
            for key, value in item.messages:
                futures.append(await producer.send(item.topic, value, key=key))
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


async def _groups_done(bootstrap: str, formats: list[str]) -> set[str]:
    """The formats whose consumer group has committed every offset of its vendor topic."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    done = set()
    for fmt in formats:
        # A consumer of the group that joins nothing: it only reads the group's committed offsets.
        reader = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=f"demo-{fmt}", enable_auto_commit=False)
        await reader.start()
        try:
            tps = [TopicPartition(f"vendor.{fmt}", p) for p in range(VENDOR_PARTITIONS)]
            ends = await reader.end_offsets(tps)
            caught_up = True
            for tp in tps:
                committed = await reader.committed(tp)
                if ends[tp] > 0 and (committed is None or committed < ends[tp]):
                    caught_up = False
            if caught_up:
                done.add(fmt)
        finally:
            await reader.stop()
    return done


async def count_committed(bootstrap: str, topic: str, partitions: int) -> int:
    """Committed records of ``topic`` (a ``read_committed`` reader, from the start to the stable end)."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed")
    await consumer.start()
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)  # read_committed: the last stable offsets
        count = 0
        while [tp for tp in tps if await consumer.position(tp) < ends[tp]]:
            for records in (await consumer.getmany(timeout_ms=500, max_records=10_000)).values():
                count += len(records)
        return count
    finally:
        await consumer.stop()


@dataclass
class Pipeline:
    bootstrap: str
    out: Path
    fleet: Fleet
    progress: Progress
    clock: Clock
    timeout_s: float = 600.0
    log: Callable[[str], None] = print
    normalizers: dict[str, Service] = field(default_factory=dict)
    sink: Service | None = None
    traffic: dict[str, Traffic] = field(default_factory=dict)

    async def run(self, formats: list[str], make_traffic: Callable[[], dict[str, Traffic]]) -> PipelineResult:
        """Topics, services, then the traffic: rendered while the sink's JVM boots, then produced."""
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)  # the demo's own clients: no library noise
        await _create_topics(self.bootstrap, formats)
        self._start_sink()
        for fmt in formats:
            self._start_normalizer(fmt)
        self.traffic = make_traffic()
        await _produce(self.bootstrap, self.traffic)
        sent = {fmt: len(item.messages) for fmt, item in self.traffic.items()}
        self.clock.lap("traffic: topics, services started, messages rendered and produced")
        return await self._follow(sent)

    def _start_sink(self) -> None:
        port = free_port()
        lake = self.out / "lake"
        args = ["sink", "--topic", UNIFIED, "--lake", str(lake), "--bootstrap-servers", self.bootstrap]
        args += ["--metrics-port", str(port)]
        self.sink = self.fleet.start("sink", args, dict(SINK_ENV), port)

    def _start_normalizer(self, fmt: str) -> None:
        from binlake.shared.cli.demo.traffic import parse_options

        port = free_port()
        env = normalizer_env(fmt, parse_options(fmt), self.bootstrap, port, self.out / "schemas")
        self.normalizers[fmt] = self.fleet.start(f"normalizer-{fmt}", ["normalizer"], env, port)

    def _check_alive(self) -> None:
        for service in self.fleet.services:
            code = service.exited()
            if code is not None:
                raise Abort(
                    f"{service.name} exited with code {code} while the demo ran; its log is {service.log}:\n"
                    f"{service.log_tail()}"
                )

    def _snapshot(self, stage: str, sent: dict[str, int], done: set[str], target: int | None) -> Snapshot:
        views = {fmt: scrape.NormalizerView.of(scrape.scrape(s.metrics_port)) for fmt, s in self.normalizers.items()}
        assert self.sink is not None
        sink = scrape.SinkView.of(scrape.scrape(self.sink.metrics_port))
        return Snapshot(self.clock.elapsed(), stage, sent, views, sink, target, set(done))

    async def _follow(self, sent: dict[str, int]) -> PipelineResult:
        done: set[str] = set()
        target: int | None = None
        stage = "normalizers: vendor topics -> binlake.events"
        deadline = time.monotonic() + self.timeout_s
        snapshot = self._snapshot(stage, sent, done, target)
        try:
            while True:
                self._check_alive()
                snapshot = self._snapshot(stage, sent, done, target)
                self.progress.update(snapshot)
                if target is None:
                    # Ask Kafka only about formats whose metrics say everything was consumed.
                    ready = [f for f, v in snapshot.normalizers.items() if f not in done and v.consumed >= sent[f]]
                    if ready:
                        done |= await _groups_done(self.bootstrap, ready)
                    if len(done) == len(sent):
                        target = await count_committed(self.bootstrap, UNIFIED, UNIFIED_PARTITIONS)
                        self.clock.lap("normalizers caught up (offsets committed)")
                        stage = "sink: binlake.events -> changelog"
                elif snapshot.sink.changelog_rows + snapshot.sink.quarantined < target:
                    pass
                elif stage.startswith("sink: binlake.events"):
                    self.clock.lap("sink: changelog caught up")
                    stage = "sink: changelog -> mirrors"
                elif snapshot.sink.mirror_rows >= snapshot.sink.changelog_rows:
                    self.clock.lap("sink: mirrors caught up")
                    break
                if time.monotonic() > deadline:
                    raise Abort(
                        f"not caught up after {self.timeout_s:.0f} s at stage '{stage}': the services' logs are in "
                        f"{self.fleet.logs}"
                    )
                await asyncio.sleep(1.0)
        finally:
            self.progress.close(snapshot)
        result = PipelineResult(sent, target or 0, snapshot.normalizers, snapshot.sink)
        result.stopped = self.fleet.stop_all(grace_s=60.0)
        self.clock.lap("services stopped (SIGTERM, by pid)")
        return result


def dead_letters(result: PipelineResult) -> dict[str, Counter[str]]:
    return {fmt: view.dead_letters for fmt, view in result.normalizers.items()}
