"""The Spark sink against a bare Spark Kafka -> Delta copy, and its end-to-end freshness, in one run.

Input: a unified topic (4 partitions) of canonical events made the way the
normalizer makes them: ``shared.generate.workload.Workload`` (8 tables) ->
canal-json rendering -> the canal-json parser -> Avro single-object encoding,
keyed and partitioned like the normalizer does (``event_key``,
``partition_for``). The generation runs before any clock starts.

1. **Throughput** (``BINLAKE_BENCH_SINK_EVENTS`` events, default 100k, already
   in the topic): each contender runs Structured Streaming with the
   available-now trigger, a fresh checkpoint and lake, and the same
   ``maxOffsetsPerTrigger`` (several micro-batches each), on one SparkSession:

   - ``bare_copy``: Kafka -> Delta append of the raw key, value, topic,
     partition and offset: the floor of Spark reading Kafka and writing Delta;
   - ``sink``: ``spark_sink.job.run``: decode, changelog, quarantine, mirrors
     (MERGE), exactly once;
   - ``textbook_peer`` (``sink_peer``): the Delta docs' CDC upsert a user would
     write instead: ``foreachBatch``, per table ``row_number()`` by key and one
     MERGE (no changelog, floors, tombstones or partial images);
   - ``merge_on_read``: the sink's changelog query, then every table's current
     state read in full (``spark_sink.mirror.current_state``: the fold of the
     changelog over the mirror, merge on read), then the mirror query that
     writes the physical mirrors; ``ratio_merge_on_read_vs_bare`` counts the
     changelog and the reads (the current state of every table, equal to the
     peer's mirrors in rows), not the physical mirrors' writing.

   Time runs from the query's start to its termination; ``ratio`` is
   sink / bare copy in events/s (target >= 0.6). A short warm-up of every
   contender on a small topic comes first, so none pays the JVM's first-use
   costs alone.
   ``floors`` (``sink_floors``) then measures, on the same session, the fixed
   cost of a Delta MERGE and the cost of decoding the run's events, and the
   lower bound they put on any sink of this design: ``best_ratio``.

2. **Freshness, sustained**: a producer thread sends canonical events at a
   steady rate (``BINLAKE_BENCH_SINK_RATE``; default half the bare copy's
   events/s when the throughput part ran, else 10,000/s) for
   ``BINLAKE_BENCH_SINK_SECONDS`` (default 300 s), each with ``ts_ms`` = its
   send time, while the sink runs with the processing-time trigger
   (``BINLAKE_BENCH_SINK_TRIGGER_S``, default 1 s) and a reader reads
   every table's current state with Spark (``current_state``),
   ``BINLAKE_BENCH_SINK_READ_PAUSE_S`` (default 5 s) after its previous read
   ended (``sink_sustained``). An
   event's freshness is the wall time at which its micro-batch's changelog
   commit became visible minus its ``ts_ms``, read from each batch's
   ``BatchReport`` (event-time histogram in 100 ms buckets, taken at the
   bucket midpoint, and the commit time); target p99 < 5 s. Its
   current-state freshness is the end of the first read that started after
   that commit minus its ``ts_ms`` (target p99 < 10 s); at the end every
   table's current state must hold exactly the generator's keys
   (``tables_not_equal_to_truth`` empty). The mirrors' freshness over the
   input's first and second halves shows whether their lag grows; ``rss``
   is the bench process' and its JVM's resident memory. ``steady`` leaves
   out the events sent during the first ``BINLAKE_BENCH_SINK_WARMUP_S``
   seconds (first batches create the tables). ``kept_up``: every event
   committed within 5 s after the input stopped (the run waits at most
   max(120 s, duration) for that; ``lag_when_input_stopped`` is what was
   still uncommitted then). A batch reads at most 20 s of input, so a sink
   that falls behind works through bounded batches. The events are encoded
   before the run with a placeholder ``ts_ms``, whose 6 varint bytes are
   overwritten at send time: the producer's per-event cost is a byte
   splice, not an Avro encoding. Before the sink, the bare copy runs alone
   under the same input (rate, trigger, batch bound; ``bare_copy``): the
   freshness this machine gives a query that only copies, with the producer
   and the broker on the same cores. Both are also measured by when each
   trigger ended (``freshness_steady_by_commits``, from the queries'
   progress), the one measure they share. ``machine_cpu_while_sending``: the
   whole machine's busy share and CPU per event while the input was sent.
   ``BINLAKE_BENCH_SINK_MIRRORS_APART=1`` runs the mirror query as its own
   ``binlake sink`` process at nice 10 (``BINLAKE_SINK_QUERIES``; its
   freshness is then polled from that process' ``/metrics``);
   ``BINLAKE_BENCH_SINK_READS_APART=1`` the reads in a Spark application of
   their own at nice 10 (``current_reads``), as a dashboard elsewhere.

3. **Scale**: ``BINLAKE_BENCH_SINK_SCALE_EVENTS`` events (default 20,000) of
   1, 10 and 100 tables, each case one changelog batch and one mirror batch
   (``scale``): how the sink's time grows with the tables a batch touches.

4. **Rounds**: the same events over 1 and 100 existing tables in rounds of one changelog and one mirror
   batch each, every table MERGEd by every batch, against small tables' changes deferred to later batches
   (``BINLAKE_BENCH_SINK_DEFER_ROWS``, default 1,000; ``sink_rounds``), the deferred MERGEs timed at the end.

5. **Cost**: rounds of input into one lake, each applied by one mirror batch
   (``BINLAKE_BENCH_SINK_COST_ROUNDS``, default 150,000, 150,000, 600,000
   events), the whole machine's busy CPU per query and round; through the
   rounds into existing mirrors, a mirror batch's CPU as a fixed part per
   batch and a part per event (``sink_cost``): the cores a sustained input
   needs for its mirrors.

6. **Triggers**: the changelog query and the bare copy over the same topic in
   small batches (2,500 events), the driver JVM's CPU per batch
   (``sink_triggers``): what each 1 s trigger of a sustained input costs.

Session (the same for both contenders, reported under ``session``):
``local[*]``, 4 GB driver, shuffle partitions and default parallelism = the
core count (``BINLAKE_BENCH_SINK_SHUFFLE_PARTITIONS``; the sink's own default
is 8), Delta ``snapshotPartitions`` = the core count (``TUNING``), AQE on
(Spark's default); ``BINLAKE_BENCH_SINK_SPARK_CONF`` (JSON) adds or overrides
settings. ``BINLAKE_BENCH_SINK_MAX_OFFSETS``: records per throughput
micro-batch (25,000); ``BINLAKE_BENCH_SINK_WARMUP_EVENTS``: warm-up size (5,000).
``load_average_1_5_15`` shows how busy the machine was: the numbers compare
only between runs at a similar load.

``python -m tests.bench.sink_bench`` starts its own broker and prints the JSON;
``tests/bench/run.py`` includes it as the ``spark_sink`` section.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaProducer

from binlake.shared.codec import avro
from binlake.shared.config.settings import KafkaSettings, kafka_settings
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kafka.records import event_key, partition_for
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Parsed
from tests.bench import sink_cost, sink_floors, sink_peer, sink_rounds, sink_sustained, sink_triggers

PARTITIONS: Final = 4
TABLES: Final = 8
FORMAT: Final = "canal-json"
TS_SENTINEL: Final = 49 * 2**34 - 1
"""A placeholder ``ts_ms``: its zigzag varint is ``FE FF FF FF FF 30``, 6 bytes like every epoch-ms time
from 1970-07 to 2039, and 0xFE/0xFF never occur in UTF-8 text, so it is found once in an encoded event."""
TS_VARINT_BYTES: Final = 6
TARGET_RATIO: Final = 0.6
CORES: Final = max(2, os.cpu_count() or 2)
TUNING: Final = {"spark.databricks.delta.snapshotPartitions": str(CORES), "spark.default.parallelism": str(CORES)}
"""Session settings of both contenders besides the sink's defaults (shuffle partitions = cores too): Delta
rebuilds a table snapshot with 50 partitions by default, a fixed cost per table and batch on a small machine."""
TARGET_P99_S: Final = 5
"""Sustained run: the changelog's freshness p99 target (and how soon after the input stops it must catch up)."""
TARGET_CURRENT_P99_S: Final = 10
"""Sustained run: the current-state reads' freshness p99 target."""


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


def _env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, str(default)))


@dataclass(frozen=True)
class BenchConfig:
    events: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_SINK_EVENTS", 100_000))
    max_offsets_per_trigger: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_SINK_MAX_OFFSETS", 25_000))
    rate: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_SINK_RATE", 10_000))
    seconds: float = field(default_factory=lambda: _env_float("BINLAKE_BENCH_SINK_SECONDS", 300.0))
    trigger_s: float = field(default_factory=lambda: _env_float("BINLAKE_BENCH_SINK_TRIGGER_S", 1.0))
    warmup_s: float = field(default_factory=lambda: _env_float("BINLAKE_BENCH_SINK_WARMUP_S", 10.0))
    read_pause_s: float = field(default_factory=lambda: _env_float("BINLAKE_BENCH_SINK_READ_PAUSE_S", 5.0))
    mirrors_apart: bool = field(default_factory=lambda: os.environ.get("BINLAKE_BENCH_SINK_MIRRORS_APART") == "1")
    reads_apart: bool = field(default_factory=lambda: os.environ.get("BINLAKE_BENCH_SINK_READS_APART") == "1")
    shuffle_partitions: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_SINK_SHUFFLE_PARTITIONS", CORES))
    warmup_events: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_SINK_WARMUP_EVENTS", 5_000))
    scale_events: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_SINK_SCALE_EVENTS", 20_000))
    spark_conf: dict[str, str] = field(
        default_factory=lambda: {**TUNING, **json.loads(os.environ.get("BINLAKE_BENCH_SINK_SPARK_CONF", "{}"))}
    )


# ---------------------------------------------------------------- input


@dataclass(frozen=True, slots=True)
class Encoded:
    """One canonical event ready to produce: its partition, key, value and where ``ts_ms`` sits in the value."""

    partition: int
    key: bytes
    value: bytes
    ts_ms: int
    """The event's own ``ts_ms`` (the workload's source commit time)."""
    ts_at: int
    """Offset of the ``ts_ms`` varint in ``value`` (which holds ``TS_SENTINEL`` there)."""

    def with_ts(self, ts_ms: int) -> bytes:
        """The value with ``ts_ms`` set: byte for byte what ``avro.encode`` makes of the event with that ts."""
        varint = zigzag_varint(ts_ms)
        if len(varint) != TS_VARINT_BYTES:
            raise ValueError(f"ts_ms {ts_ms} does not encode in {TS_VARINT_BYTES} bytes (1970-07 to 2039 only)")
        return self.value[: self.ts_at] + varint + self.value[self.ts_at + TS_VARINT_BYTES :]


def zigzag_varint(n: int) -> bytes:
    """An Avro ``long``: zigzag, then 7 bits per byte, low groups first."""
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def encode_events(events: int, *, seed: int, tables: int = TABLES, database: str = "bench") -> list[Encoded]:
    """``events`` canonical events of one workload, as the normalizer would publish them."""
    render_fn = render.get(FORMAT)
    render_ctx = render.RenderContext()
    parser = registry.get(FORMAT)
    ctx = ParseContext(topic=f"{database}.vendor")
    sentinel = zigzag_varint(TS_SENTINEL)
    partitions = list(range(PARTITIONS))
    out: list[Encoded] = []
    for offset, change in enumerate(Workload(seed=seed, tables=tables, database=database).run(events)):
        outcome = parser(render_fn(change, render_ctx), ctx.at(ctx.topic, 0, offset))
        if not isinstance(outcome, Parsed):
            raise RuntimeError(f"the {FORMAT} parser rejected a generated message: {outcome}")
        for event in outcome.events:
            if event.ts_ms is None:
                raise RuntimeError("a generated event has no ts_ms")
            value = avro.encode(replace(event, ts_ms=TS_SENTINEL))
            at = value.find(sentinel)
            if at < 0 or value.find(sentinel, at + 1) >= 0:
                raise RuntimeError("the ts_ms placeholder is not found exactly once in an encoded event")
            key = event_key(event)
            out.append(Encoded(partition_for(key, partitions, partitions), key, value, event.ts_ms, at))
    return out


def generate(events: int, *, seed: int = 7, tables: int = TABLES) -> list[Encoded]:
    """``events`` canonical events over ``tables`` tables (about 90 us each on one core: render, parse, encode)."""
    return encode_events(events, seed=seed, tables=tables)


def _producer(bootstrap: str) -> AIOKafkaProducer:
    # The bench's input needs no transaction: the sink reads read_committed, which
    # also returns plain (non-transactional) records.
    return AIOKafkaProducer(
        bootstrap_servers=bootstrap, linger_ms=5, max_batch_size=1024 * 1024, max_request_size=16 * 1024 * 1024
    )


async def _send(producer: AIOKafkaProducer, topic: str, items: Iterable[tuple[int, bytes, bytes]]) -> int:
    """Send (partition, key, value) in record batches, one partition's records per batch; return the count."""
    by_partition: dict[int, list[tuple[bytes, bytes]]] = {}
    for partition, key, value in items:
        by_partition.setdefault(partition, []).append((key, value))
    futures = []
    sent = 0
    for partition, records in by_partition.items():
        batch = producer.create_batch()
        for key, value in records:
            if batch.append(key=key, value=value, timestamp=None) is None:
                batch.close()
                futures.append(await producer.send_batch(batch, topic, partition=partition))
                batch = producer.create_batch()
                if batch.append(key=key, value=value, timestamp=None) is None:
                    raise RuntimeError("a record does not fit into an empty batch: raise max_batch_size")
            sent += 1
        batch.close()
        futures.append(await producer.send_batch(batch, topic, partition=partition))
    await asyncio.gather(*futures)
    return sent


async def produce(bootstrap: str, topic: str, items: Sequence[Encoded]) -> None:
    """Produce every event with its own ``ts_ms``."""
    producer = _producer(bootstrap)
    await producer.start()
    try:
        chunk = 20_000
        for start in range(0, len(items), chunk):
            part = items[start : start + chunk]
            await _send(producer, topic, ((e.partition, e.key, e.with_ts(e.ts_ms)) for e in part))
    finally:
        await producer.stop()


async def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from tests.support import kafka_tools

    await kafka_tools.create_topics(bootstrap, {topic: partitions})


@dataclass
class PacedProducer:
    """Sends ``items`` at ``rate`` events/s from a thread of its own, stamping ``ts_ms`` = send time."""

    bootstrap: str
    topic: str
    items: Sequence[Encoded]
    rate: int
    tick_s: float = 0.005
    sent: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0
    ticks: list[tuple[int, int]] = field(default_factory=list)
    """(events sent so far, their ts_ms) per send: the send time of every event, in send order."""
    error: BaseException | None = None
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-paced-producer", daemon=True)
        self._thread.start()

    def join(self, timeout_s: float | None = None) -> None:
        assert self._thread is not None
        self._thread.join(timeout_s)
        if self.error is not None:
            raise RuntimeError(f"the paced producer failed: {self.error!r}") from self.error

    def _run(self) -> None:
        try:
            asyncio.run(self._send_all())
        except BaseException as exc:  # noqa: BLE001 - handed to the main thread by join()
            self.error = exc

    async def _send_all(self) -> None:
        producer = _producer(self.bootstrap)
        await producer.start()
        try:
            self.started_at = time.time()
            start = time.monotonic()
            total = len(self.items)
            while self.sent < total:
                due = min(total, int((time.monotonic() - start) * self.rate))
                if due > self.sent:
                    now_ms = int(time.time() * 1000)
                    part = self.items[self.sent : due]
                    await _send(producer, self.topic, ((e.partition, e.key, e.with_ts(now_ms)) for e in part))
                    self.sent = due
                    self.ticks.append((due, now_ms))
                await asyncio.sleep(self.tick_s)
            await producer.flush()
            self.finished_at = time.time()
        finally:
            await producer.stop()


# ---------------------------------------------------------------- contenders


def _session(config: BenchConfig) -> Any:
    from binlake.spark_sink.session import build_session

    spark = build_session(_sink_settings(config, lake="unused", topic="unused"), app_name="binlake-sink-bench")
    # Every trigger's progress is kept (Spark keeps the last 100): the sustained run's commit times need all.
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    return spark


def _sink_settings(config: BenchConfig, *, lake: str, topic: str, **overrides: Any) -> Any:
    from binlake.spark_sink.settings import DEFAULT_PACKAGES, SinkSettings

    conf = {"spark.driver.memory": "4g"}
    conf.update(config.spark_conf)
    values: dict[str, Any] = {
        "topic": topic,
        "lake_uri": lake,
        "master": "local[*]",
        "shuffle_partitions": config.shuffle_partitions,
        "trigger": "available-now",
        "max_offsets_per_trigger": config.max_offsets_per_trigger,
        "log_level": "ERROR",
        "spark_conf": conf,
        # The textbook peer decodes with spark-avro, as its user would; the sink needs none.
        "spark_packages": [*DEFAULT_PACKAGES, sink_peer.PACKAGE],
    }
    values.update(overrides)
    # Through the constructor, so BINLAKE_SINK_* variables (e.g. TABLE_PARALLELISM) tune what is not set here.
    return SinkSettings(**values)


def bare_copy(spark: Any, kafka: KafkaSettings, config: BenchConfig, topic: str, lake: Path) -> float:
    """Kafka -> Delta append of the raw records, available-now; seconds from start to termination."""
    started = time.perf_counter()
    query = _bare_query(spark, kafka, topic, lake, max_offsets=config.max_offsets_per_trigger, availableNow=True)
    query.awaitTermination()
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the bare copy failed: {query.exception()}")
    return seconds


def _bare_query(spark: Any, kafka: KafkaSettings, topic: str, lake: Path, *, max_offsets: int, **trigger: Any) -> Any:
    """The bare copy's query (the raw records appended to ``lake``/raw), started with ``trigger``."""
    frame = sink_peer.kafka_stream(spark, kafka, topic, max_offsets=max_offsets).select(
        "key", "value", "topic", "partition", "offset"
    )
    return (
        frame.writeStream.format("delta")
        .option("checkpointLocation", (lake / "_checkpoint").as_uri())
        .trigger(**trigger)
        .start((lake / "raw").as_uri())
    )


@dataclass
class SinkRun:
    seconds: float
    reports: list[Any]
    progress: list[dict[str, Any]]
    mirror_reports: list[Any] = field(default_factory=list)
    changelog_seconds: float | None = None
    """From the start until the changelog query ended (mirrors=follow: the mirror query runs after it)."""


def sink_copy(
    spark: Any, kafka: KafkaSettings, config: BenchConfig, topic: str, lake: Path, **overrides: Any
) -> SinkRun:
    from binlake.spark_sink import job
    from binlake.spark_sink.observe.metrics import SinkMetrics

    settings = _sink_settings(config, lake=lake.as_uri(), topic=topic, **overrides)
    reports: list[Any] = []
    metrics = SinkMetrics()
    listener = job.attach_listener(spark, metrics)
    mirror_reports: list[Any] = []
    ended: list[float] = []
    started = time.perf_counter()
    queries = job.start(
        spark, settings, kafka, on_batch=reports.append, on_mirror_batch=mirror_reports.append, metrics=metrics
    )
    assert queries.changelog is not None  # queries=both
    while not queries.wait(1):
        if not ended and not queries.changelog.isActive:
            ended.append(time.perf_counter() - started)
    seconds = time.perf_counter() - started
    job.detach_listener(spark, listener, queries.changelog.runId)
    if queries.error() is not None:
        raise RuntimeError(f"the sink failed: {queries.error()}")
    progress = [json.loads(p.json) for p in queries.changelog.recentProgress]
    return SinkRun(seconds, reports, progress, mirror_reports, ended[0] if ended else None)


def merge_on_read(
    spark: Any, kafka: KafkaSettings, config: BenchConfig, topic: str, lake: Path, *, tables: list[str]
) -> dict[str, Any]:
    """The sink with its mirrors read on merge (``current_state``): the changelog query alone, then every
    table's current state read in full (mirror + fold of the changelog's tail; no mirror yet), then the
    mirror query that writes the physical mirrors, each timed."""
    from binlake.spark_sink import job
    from binlake.spark_sink.changelog.table import ensure_table
    from binlake.spark_sink.mirror import current_state

    settings = _sink_settings(config, lake=lake.as_uri(), topic=topic)
    started = time.perf_counter()
    version = ensure_table(spark, settings.changelog_uri(), list(settings.changelog_partition_by))
    ids = job.owned_app_ids(spark, settings)
    query = job.start_changelog(spark, settings, kafka, ids.changelog, version=version)
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(f"the changelog query failed: {query.exception()}")
    changelog_s = time.perf_counter() - started
    frames = current_state.current_tables(spark, settings, tables)
    rows = sum(sink_sustained.read_in_full(frame) for frame in frames.values())
    current_s = time.perf_counter() - started - changelog_s
    mirrors = job.start_mirrors(spark, settings, ids.mirrors)
    mirrors.awaitTermination()
    if mirrors.exception() is not None:
        raise RuntimeError(f"the mirror query failed: {mirrors.exception()}")
    drained_s = time.perf_counter() - started - changelog_s - current_s
    return {
        "changelog_s": round(changelog_s, 3),
        "current_read_s": round(current_s, 3),
        "current_rows": rows,
        "mirrors_written_s": round(drained_s, 3),
    }


def _rate(events: int, seconds: float) -> int:
    return round(events / seconds) if seconds > 0 else 0


def _phases(progress: list[dict[str, Any]]) -> dict[str, Any]:
    """Sum of each progress phase (ms) over the batches: where the time goes."""
    totals: dict[str, int] = {}
    for entry in progress:
        for phase, ms in (entry.get("durationMs") or {}).items():
            totals[phase] = totals.get(phase, 0) + int(ms)
    return {"batches": len(progress), "ms_by_phase": dict(sorted(totals.items()))}


def _steps(reports: Iterable[Any]) -> dict[str, float]:
    """Seconds per step of ``spark_sink.changelog.batch.process`` over the batches (``BatchReport.steps``)."""
    totals: dict[str, float] = {}
    for report in reports:
        for name, seconds in report.steps.seconds.items():
            totals[name] = totals.get(name, 0.0) + seconds
    return {name: round(seconds, 2) for name, seconds in sorted(totals.items(), key=lambda item: -item[1])}


# ---------------------------------------------------------------- freshness


def weighted_percentiles(values: Iterable[tuple[float, int]], quantiles: Sequence[float]) -> list[float | None]:
    """The smallest value at or above each quantile of the weighted values (nearest rank)."""
    ordered = sorted((v, c) for v, c in values if c > 0)
    total = sum(c for _, c in ordered)
    out: list[float | None] = []
    for q in quantiles:
        if total == 0:
            out.append(None)
            continue
        rank = max(1, math.ceil(q * total))
        seen = 0
        for value, count in ordered:
            seen += count
            if seen >= rank:
                out.append(value)
                break
    return out


def freshness_samples(
    reports: Iterable[Any], *, sent_from_ms: float = -math.inf, sent_before_ms: float = math.inf
) -> Iterator[tuple[float, int]]:
    """(freshness s, events) per event-time bucket of every batch, for buckets sent at or after ``sent_from_ms``
    and before ``sent_before_ms``."""
    for report in reports:
        if report.visible_at_s is None:
            continue
        for bucket, (seconds, count) in zip(
            report.stats.event_time, report.stats.freshness(report.visible_at_s), strict=True
        ):
            if sent_from_ms <= bucket.mid_ms < sent_before_ms:
                yield seconds, count


def pending_ages(ticks: Sequence[tuple[int, int]], committed: int, at_s: float) -> list[tuple[float, int]]:
    """(age at ``at_s``, events) of the events sent after the first ``committed`` ones: a lower bound of
    their freshness. Each partition is read in offset order, so the uncommitted events are about the last sent."""
    out: list[tuple[float, int]] = []
    before = 0
    for cumulative, ts_ms in ticks:
        first = max(before, committed)
        if cumulative > first:
            out.append((at_s - ts_ms / 1000, cumulative - first))
        before = cumulative
    return out


def _summary(samples: list[tuple[float, int]]) -> dict[str, Any]:
    p50, p90, p99 = weighted_percentiles(samples, (0.5, 0.9, 0.99))
    return {
        "events": sum(c for _, c in samples),
        "p50_s": _round(p50),
        "p90_s": _round(p90),
        "p99_s": _round(p99),
    }


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def bare_freshness(spark: Any, kafka: KafkaSettings, config: BenchConfig, topic: str, lake: Path) -> dict[str, Any]:
    """The bare copy under the sustained run's input (rate, trigger, batch bound), alone: the freshness this
    machine gives a Kafka -> Delta query that does nothing else, by its commit times (``progress_commits``)."""
    items = generate(int(config.rate * config.seconds), seed=23)
    query = _bare_query(
        spark, kafka, topic, lake, max_offsets=config.rate * 20, processingTime=f"{config.trigger_s} seconds"
    )
    producer = PacedProducer(kafka.bootstrap_servers, topic, items, config.rate)
    try:
        cpu_from = sink_sustained.MachineCpu.now()
        producer.start()
        producer.join()
        cpu = sink_sustained.MachineCpu.now().since(cpu_from, producer.sent)
        deadline = time.monotonic() + max(120.0, config.seconds)
        while time.monotonic() < deadline and query.isActive:
            if _progress_rows(query) >= producer.sent:
                break
            time.sleep(0.5)
        caught_up_at = time.time()
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"the bare copy failed: {query.exception()}")
    progress = [json.loads(p.json) for p in query.recentProgress]
    commits = sink_sustained.progress_commits(progress)
    steady_from_ms = producer.started_at * 1000 + config.warmup_s * 1000
    durations = sorted(int(p["durationMs"].get("triggerExecution", 0)) for p in progress if p.get("numInputRows"))
    caught_up = bool(commits) and commits[-1][1] >= producer.sent
    return {
        "sent": producer.sent,
        "committed": commits[-1][1] if commits else 0,
        "caught_up_after_input_s": round(caught_up_at - producer.finished_at, 3) if caught_up else None,
        "freshness_steady": {
            **_summary(sink_sustained.commit_freshness(producer.ticks, commits, sent_from_ms=steady_from_ms)),
            "after_s": config.warmup_s,
        },
        "batches": len(durations),
        "batch_ms_p50_p90_max": _p50_p90_max(durations),
        "machine_cpu_while_sending": cpu,
    }


def _progress_rows(query: Any) -> int:
    return sum(int(json.loads(p.json).get("numInputRows", 0)) for p in query.recentProgress)


def _p50_p90_max(durations: Sequence[int]) -> list[int] | None:
    return [durations[len(durations) // 2], durations[int(len(durations) * 0.9)], durations[-1]] if durations else None


def freshness(spark: Any, kafka: KafkaSettings, config: BenchConfig, topic: str, lake: Path) -> dict[str, Any]:
    """A steady input rate (``config.rate``) while the sink runs with the processing-time
    trigger and a reader reads every table's current state again and again (``sink_sustained``): freshness
    percentiles of the changelog, the current-state reads and the mirrors, the reads against the ground
    truth at the end, and memory."""
    from binlake.spark_sink import job
    from binlake.spark_sink.observe.metrics import SinkMetrics

    total = int(config.rate * config.seconds)
    seed = 23
    items = generate(total, seed=seed)
    settings = _sink_settings(
        config,
        lake=lake.as_uri(),
        topic=topic,
        trigger="processing-time",
        trigger_interval_s=config.trigger_s,
        # 20 s of input at most per batch: a sink that falls behind reads bounded batches (and the
        # run ends) instead of one batch of the whole backlog; below 20 s of lag it changes nothing.
        max_offsets_per_trigger=config.rate * 20,
        queries="changelog" if config.mirrors_apart else "both",
    )
    reports: list[Any] = []
    committed = threading.Condition()

    def on_batch(report: Any) -> None:
        with committed:
            reports.append(report)
            committed.notify_all()

    def rows() -> int:
        return sum(r.changelog_rows for r in reports)

    metrics = SinkMetrics()
    listener = job.attach_listener(spark, metrics)
    mirror_reports: list[Any] = []
    queries = job.start(
        spark, settings, kafka, on_batch=on_batch, on_mirror_batch=mirror_reports.append, metrics=metrics
    )
    query = queries.changelog
    assert query is not None  # queries=both or changelog
    tables = [f"bench.t{index:02d}" for index in range(TABLES)]
    apart = sink_sustained.MirrorProcess(settings, kafka.bootstrap_servers) if config.mirrors_apart else None
    poller = None if apart is None else sink_sustained.MirrorPoller(apart.port, tables)
    if apart is not None and poller is not None:
        apart.start()
        poller.start()
    producer = PacedProducer(kafka.bootstrap_servers, topic, items, config.rate)
    reader: sink_sustained.CurrentReader | sink_sustained.ReaderProcess
    if config.reads_apart:
        reader = sink_sustained.ReaderProcess(
            spark, settings, kafka.bootstrap_servers, tables, pause_s=config.read_pause_s
        )
    else:
        reader = sink_sustained.CurrentReader(spark, settings, tables, pause_s=config.read_pause_s)
    rss = sink_sustained.RssSampler()
    rss.start()
    try:
        reader.start()
        cpu_from = sink_sustained.MachineCpu.now()
        producer.start()
        producer.join()
        cpu = sink_sustained.MachineCpu.now().since(cpu_from, producer.sent)
        with committed:
            lag_at_end = producer.sent - rows()
        deadline = time.monotonic() + max(120.0, config.seconds)
        with committed:
            while rows() < producer.sent and time.monotonic() < deadline and not queries.over():
                committed.wait(1.0)
            committed_at_stop = rows()
            caught_up = committed_at_stop == producer.sent
        caught_up_at = time.time()
        if queries.error() is not None:
            raise RuntimeError(f"the sink failed: {queries.error()}")
    finally:
        reader.stop()
        memory = rss.stop()
        queries.stop()  # without catching up: interrupts the running batches, which the lake never sees
        if poller is not None:
            poller.stop()
        if apart is not None:
            apart.stop()
        job.detach_listener(spark, listener, query.runId)
    all_samples = list(freshness_samples(reports))
    steady_samples = list(freshness_samples(reports, sent_from_ms=producer.started_at * 1000 + config.warmup_s * 1000))
    oldest = [
        r.visible_at_s - r.stats.oldest_ts_ms() / 1000
        for r in reports
        if r.visible_at_s is not None and r.stats.oldest_ts_ms() is not None
    ]
    reader.check()
    progress = [json.loads(p.json) for p in query.recentProgress]
    durations = sorted(int(p["durationMs"].get("triggerExecution", 0)) for p in progress if p.get("numInputRows"))
    send_seconds = producer.finished_at - producer.started_at
    steady_from_ms = producer.started_at * 1000 + config.warmup_s * 1000
    half_ms = (producer.started_at + producer.finished_at) / 2 * 1000
    if poller is None:
        mirror_samples = list(freshness_samples(mirror_reports, sent_from_ms=steady_from_ms))
        first_half = list(freshness_samples(mirror_reports, sent_from_ms=steady_from_ms, sent_before_ms=half_ms))
        second_half = list(freshness_samples(mirror_reports, sent_from_ms=half_ms))
    else:  # the mirror process' own figures, polled from its /metrics
        polls = poller.polls
        mirror_samples = sink_sustained.mirror_freshness(producer.ticks, polls, sent_from_ms=steady_from_ms)
        first_half = sink_sustained.mirror_freshness(
            producer.ticks, polls, sent_from_ms=steady_from_ms, sent_before_ms=half_ms
        )
        second_half = sink_sustained.mirror_freshness(producer.ticks, polls, sent_from_ms=half_ms)
    read_seconds = sorted(ended - started for started, ended, _ in reader.reads)
    wrong = (
        sink_sustained.truth_mismatches(
            reader.ids(),
            events=producer.sent,
            seed=seed,
            tables=TABLES,
            database="bench",
        )
        if caught_up
        else ["not caught up: not compared"]
    )
    return {
        "target_rate": config.rate,
        "seconds": config.seconds,
        "trigger_interval_s": config.trigger_s,
        "sent": producer.sent,
        "achieved_rate": _rate(producer.sent, send_seconds),
        "committed": committed_at_stop,
        "lag_when_input_stopped": lag_at_end,
        "caught_up_after_input_s": round(caught_up_at - producer.finished_at, 3) if caught_up else None,
        "kept_up": caught_up and caught_up_at - producer.finished_at <= TARGET_P99_S,
        "freshness_all": {**_summary(all_samples), "max_s": _round(max(oldest) if oldest else None)},
        "freshness_steady": {**_summary(steady_samples), "after_s": config.warmup_s},
        "freshness_incl_uncommitted_lower_bound": None
        if caught_up
        else _summary(all_samples + pending_ages(producer.ticks, committed_at_stop, caught_up_at)),
        "target_p99_s": TARGET_P99_S,
        "target_current_state_p99_s": TARGET_CURRENT_P99_S,
        "batches": len(reports),
        "batch_rows_median": sorted(r.changelog_rows for r in reports)[len(reports) // 2] if reports else 0,
        "batch_ms_p50_p90_max": _p50_p90_max(durations),
        # Measured as the bare copy's is (``bare_copy``): when each trigger ended, after the batch's last step.
        "freshness_steady_by_commits": _summary(
            sink_sustained.commit_freshness(
                producer.ticks, sink_sustained.progress_commits(progress), sent_from_ms=steady_from_ms
            )
        ),
        "progress": _phases(progress),
        "mirrors": settings.mirrors,
        # The mirror query in a Spark application of its own (BINLAKE_SINK_QUERIES), at nice 10: its
        # batches are not reported to this process, so the mirrors' freshness below is polled from its /metrics.
        "mirrors_apart": config.mirrors_apart,
        "mirror_process_peak_rss_mib": None if apart is None else apart.peak_rss_mib,
        "mirror_trigger_interval_s": settings.mirror_trigger_interval_s,
        # mirrors=follow: when the mirror commits made the events visible in the mirrors (what they held by
        # the end of the run; the mirror query is not waited for).
        "mirror_freshness_steady": _summary(mirror_samples),
        # Bounded lag: the mirrors' freshness over the second half of the input against the first half.
        "mirror_freshness_first_half": _summary(first_half),
        "mirror_freshness_second_half": _summary(second_half),
        "current_state": {
            "reader": "spark",
            # In a Spark application of its own at nice 10 (a dashboard elsewhere), or a thread of this one.
            "reads_apart": config.reads_apart,
            "reader_process_peak_rss_mib": getattr(reader, "peak_rss_mib", None),
            "reads": len(reader.reads),
            "read_s_p50_max": [round(read_seconds[len(read_seconds) // 2], 2), round(read_seconds[-1], 2)]
            if read_seconds
            else None,
            "freshness_steady": _summary(
                list(sink_sustained.read_freshness(reports, reader.reads, sent_from_ms=steady_from_ms))
            ),
            "events_no_read_saw": sink_sustained.unseen_events(reports, reader.reads),
            "tables_not_equal_to_truth": wrong,
        },
        # The whole machine while the input was sent (the bare copy's is under bare_copy): a share near 1
        # means the cores were the limit.
        "machine_cpu_while_sending": cpu,
        "rss": memory,
        "mirror_batches": len(mirror_reports),
        "mirror_batch_s": [
            round(r.visible_at_s - r.started_at_s, 1) for r in mirror_reports if r.visible_at_s is not None
        ],
        # Where each mirror batch went: its changelog rows and wall seconds per step (summed over the tables'
        # threads, so they may add up to more than the batch).
        "mirror_batch_steps": [
            {"rows": r.rows, **{name: round(s, 1) for name, s in sorted(r.steps.seconds.items())}}
            for r in mirror_reports
        ],
    }


# ---------------------------------------------------------------- entry points


def _warm_up(spark: Any, kafka: KafkaSettings, config: BenchConfig, tmp: Path, items: Sequence[Encoded]) -> str:
    """The bare copy and the sink over a small topic of the first ``items``, which it returns: no contender
    pays the JVM's first-use costs alone (the textbook peer and the merge-on-read reads warm up on it too,
    in ``_throughput``)."""
    warm = f"bench-sink-warm-{os.urandom(4).hex()}"
    asyncio.run(create_topic(kafka.bootstrap_servers, warm))
    asyncio.run(produce(kafka.bootstrap_servers, warm, items[: config.warmup_events]))
    bare_copy(spark, kafka, config, warm, tmp / "warm-bare")
    sink_copy(spark, kafka, config, warm, tmp / "warm-sink")
    return warm


def _throughput(
    spark: Any, kafka: KafkaSettings, config: BenchConfig, tmp: Path, items: list[Encoded]
) -> dict[str, Any]:
    bootstrap = kafka.bootstrap_servers
    warm = _warm_up(spark, kafka, config, tmp, items)
    main = f"bench-sink-{os.urandom(4).hex()}"
    asyncio.run(create_topic(bootstrap, main))
    asyncio.run(produce(bootstrap, main, items))
    peer_tables = sink_peer.tables_of([item.value for item in items])
    sink_peer.textbook_copy(
        spark, kafka, warm, tmp / "warm-peer", peer_tables, max_offsets=config.max_offsets_per_trigger
    )
    # The current-state reads too: the first reads in a JVM took 3x the later ones (21 s against 6-7 s for
    # 50,000 events), a cost the other contenders' warm-up runs spare them.
    merge_on_read(spark, kafka, config, warm, tmp / "warm-mor", tables=[t.name for t in peer_tables])
    bare_s = bare_copy(spark, kafka, config, main, tmp / "bare")
    shutil.rmtree(tmp / "bare", ignore_errors=True)
    sink = sink_copy(spark, kafka, config, main, tmp / "sink")
    events = len(items)
    written = sum(r.changelog_rows for r in sink.reports)
    if written != events:
        raise RuntimeError(f"the sink wrote {written} changelog rows for {events} events")
    peer_s = sink_peer.textbook_copy(
        spark, kafka, main, tmp / "peer", peer_tables, max_offsets=config.max_offsets_per_trigger
    )
    peer_rows = sink_peer.mirror_rows(spark, tmp / "peer", peer_tables)
    mor = merge_on_read(spark, kafka, config, main, tmp / "mor", tables=[t.name for t in peer_tables])
    if mor["current_rows"] != peer_rows:
        raise RuntimeError(f"the current-state reads found {mor['current_rows']} rows, the peer {peer_rows}")
    mor_s = mor["changelog_s"] + mor["current_read_s"]
    sink_settings = _sink_settings(config, lake=(tmp / "sink").as_uri(), topic=main)
    sink_rows = sum(spark.read.format("delta").load(sink_settings.mirror_uri(t.name)).count() for t in peer_tables)
    bare_rate, sink_rate, peer_rate = _rate(events, bare_s), _rate(events, sink.seconds), _rate(events, peer_s)
    bounds = sink_floors.floors(spark, kafka, main, tmp, bare_s=bare_s, tables=TABLES, cores=CORES)
    return {
        "events": events,
        "max_offsets_per_trigger": config.max_offsets_per_trigger,
        "bare_copy": {"seconds": round(bare_s, 3), "events_per_s": bare_rate},
        "sink": {
            "seconds": round(sink.seconds, 3),
            "events_per_s": sink_rate,
            "batches": len(sink.reports),
            "progress": _phases(sink.progress),
            "seconds_by_step": _steps(sink.reports),
            "mirrors": _sink_settings(config, lake="unused", topic="unused").mirrors,
            "changelog_done_s": None if sink.changelog_seconds is None else round(sink.changelog_seconds, 3),
            "mirror_batches": len(sink.mirror_reports),
            "mirror_seconds_by_step": _steps(sink.mirror_reports),
            "mirror_rows": sink_rows,
        },
        # The Delta docs' CDC upsert (foreachBatch, row_number per key, one MERGE per table): sink_peer.
        "textbook_peer": {"seconds": round(peer_s, 3), "events_per_s": peer_rate, "mirror_rows": peer_rows},
        # The changelog query, then every table's current state read (merge on read), then the mirror query.
        "merge_on_read": mor,
        "ratio_merge_on_read_vs_bare": round(bare_s / mor_s, 3) if mor_s else None,
        "ratio_merge_on_read_vs_textbook_peer": round(peer_s / mor_s, 3) if mor_s else None,
        "ratio_sink_vs_bare": round(sink_rate / bare_rate, 3) if bare_rate else None,
        "ratio_sink_vs_textbook_peer": round(sink_rate / peer_rate, 3) if peer_rate else None,
        "ratio_textbook_peer_vs_bare": round(peer_rate / bare_rate, 3) if bare_rate else None,
        # The changelog path alone (mirrors=follow: the changelog query ends before the mirror query starts).
        "ratio_changelog_vs_bare": (round(bare_s / sink.changelog_seconds, 3) if sink.changelog_seconds else None),
        # The changelog query with the machine to itself (merge_on_read's first part: no mirror query beside it).
        "ratio_changelog_alone_vs_bare": round(bare_s / mor["changelog_s"], 3) if mor["changelog_s"] else None,
        "target_ratio": TARGET_RATIO,
        "floors": bounds,
    }


SCALE_TABLES: Final = (1, 10, 100)


def scale(spark: Any, kafka: KafkaSettings, config: BenchConfig, tmp: Path) -> dict[str, Any]:
    """The same number of events over 1, 10 and 100 tables, one micro-batch each: the sink's time per case.

    Each case is one changelog batch and one mirror batch (available-now, ``maxOffsetsPerTrigger`` above
    the event count), after a small warm-up; ``ratio_100_vs_1`` is the 100-table case's time over the
    1-table case's (what a table costs once its rows are paid for).
    """
    bootstrap = kafka.bootstrap_servers
    suffix = os.urandom(4).hex()
    cases: dict[str, Any] = {}
    warm = f"bench-sink-scale-warm-{suffix}"
    asyncio.run(create_topic(bootstrap, warm))
    asyncio.run(produce(bootstrap, warm, generate(min(2_000, config.scale_events), tables=1)))
    sink_copy(spark, kafka, config, warm, tmp / "scale-warm", max_offsets_per_trigger=config.scale_events * 2)
    for tables in SCALE_TABLES:
        items = generate(config.scale_events, tables=tables)
        topic = f"bench-sink-scale{tables}-{suffix}"
        asyncio.run(create_topic(bootstrap, topic))
        asyncio.run(produce(bootstrap, topic, items))
        lake = tmp / f"scale-{tables}"
        run = sink_copy(spark, kafka, config, topic, lake, max_offsets_per_trigger=len(items) * 2)
        shutil.rmtree(lake, ignore_errors=True)
        changelog_s = run.changelog_seconds
        cases[str(tables)] = {
            "events": len(items),
            "seconds": round(run.seconds, 3),
            "changelog_s": None if changelog_s is None else round(changelog_s, 3),
            "mirrors_s": None if changelog_s is None else round(run.seconds - changelog_s, 3),
            "mirror_seconds_by_step": _steps(run.mirror_reports),
        }
    ratio = f"ratio_{SCALE_TABLES[-1]}_vs_{SCALE_TABLES[0]}"

    def ratio_of(found: dict[str, Any]) -> float | None:
        first, last = found[str(SCALE_TABLES[0])]["seconds"], found[str(SCALE_TABLES[-1])]["seconds"]
        return round(last / first, 2) if first else None

    return {
        "tables": cases,
        ratio: ratio_of(cases),
    }


PARTS: Final = ("throughput", "freshness", "scale", "rounds", "cost", "triggers")


def run(bootstrap: str, config: BenchConfig | None = None, parts: Sequence[str] = PARTS) -> dict[str, Any]:
    """The measurements (``parts``) on the broker at ``bootstrap``; a JSON-able dict."""
    config = config or BenchConfig()
    kafka = kafka_settings(bootstrap)
    load_before = os.getloadavg()
    started = time.perf_counter()
    items = generate(config.events) if "throughput" in parts else []
    generation_s = time.perf_counter() - started
    with tempfile.TemporaryDirectory(prefix="sink-bench-") as name:
        tmp = Path(name)
        spark = _session(config)
        try:
            report: dict[str, Any] = {
                "session": {
                    "master": spark.sparkContext.master,
                    "default_parallelism": spark.sparkContext.defaultParallelism,
                    "shuffle_partitions": spark.conf.get("spark.sql.shuffle.partitions"),
                    "adaptive": spark.conf.get("spark.sql.adaptive.enabled"),
                    "driver_memory": spark.conf.get("spark.driver.memory"),
                    "extra_conf": config.spark_conf,
                },
                "input": {"partitions": PARTITIONS, "tables": TABLES, "format": FORMAT},
                "generation_s": round(generation_s, 1),
            }
            rate: int | None = None
            if "throughput" in parts:
                report["throughput"] = _throughput(spark, kafka, config, tmp, items)
                if "BINLAKE_BENCH_SINK_RATE" not in os.environ:
                    rate = report["throughput"]["bare_copy"]["events_per_s"] // 2
            del items
            if "scale" in parts:
                report["scale"] = scale(spark, kafka, config, tmp)
            if "rounds" in parts:
                report["rounds"] = sink_rounds.rounds(spark, kafka, config, tmp)
            if "cost" in parts:
                report["cost"] = sink_cost.cost(spark, kafka, config, tmp)
            if "triggers" in parts:
                report["triggers"] = sink_triggers.triggers(spark, kafka, config, tmp)
            fresh_config = config if rate is None else replace(config, rate=rate)
            # The sustained part's JVM warmed up as the throughput part's contenders are (its reads too).
            if "throughput" not in parts and "freshness" in parts:
                warm = _warm_up(spark, kafka, config, tmp, generate(config.warmup_events))
                tables = [f"bench.t{index:02d}" for index in range(TABLES)]
                merge_on_read(spark, kafka, config, warm, tmp / "warm-mor", tables=tables)
            if "freshness" in parts:
                bare_topic, topic = (f"bench-sink-{name}-{os.urandom(4).hex()}" for name in ("bare", "fresh"))
                for name in (bare_topic, topic):
                    asyncio.run(create_topic(bootstrap, name))
                bare = bare_freshness(spark, kafka, fresh_config, bare_topic, tmp / "bare-fresh")
                report["freshness"] = freshness(spark, kafka, fresh_config, topic, tmp / "fresh")
                report["freshness"]["bare_copy"] = bare
        finally:
            spark.stop()
    # Other processes' CPU use shows here: the numbers above are only comparable at a low load.
    report["load_average_1_5_15"] = {
        "before": [round(x, 1) for x in load_before],
        "after": [round(x, 1) for x in os.getloadavg()],
    }
    return report


def main(argv: list[str] | None = None) -> int:
    from binlake.shared.devbroker import broker

    parser = argparse.ArgumentParser(prog="python -m tests.bench.sink_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=PARTS, action="append", help="run only this part (repeatable)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="sink-bench-broker-") as run_dir:
        info = broker.start(Path(run_dir), timeout_s=120)
        try:
            report = run(info.bootstrap, parts=args.only or PARTS)
        finally:
            with contextlib.suppress(broker.BrokerError):
                broker.stop(Path(run_dir))
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
