"""The Structured Streaming queries: the unified topic -> changelog, and the changelog -> mirrors.

With ``mirrors=follow`` (the default) the sink runs two queries in one
SparkSession: the changelog query (Kafka source -> ``changelog.batch.process``: decode,
quarantine, changelog) and the mirror query (the changelog as a Delta
streaming source -> ``mirror.batch.process``: mirrors, tombstones, history),
each with its own checkpoint, trigger interval, Delta transaction app id and
fair-scheduler pool. With ``queries=changelog`` or ``queries=mirrors`` a
process runs one of them: two processes, two Spark applications, one lake.
With ``mirrors=inline`` only the changelog query runs, and it MERGEs the
mirrors itself.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict, Unpack

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from binlake.shared.config.settings import KafkaSettings
from binlake.spark_sink import delta
from binlake.spark_sink.batch_error import guarded
from binlake.spark_sink.changelog.batch import BatchReport, process
from binlake.spark_sink.changelog.dedup import Frontier
from binlake.spark_sink.changelog.table import ensure_table
from binlake.spark_sink.checkpoint import app_ids, offset_log, writer_lake
from binlake.spark_sink.checkpoint.writer_lake import WriterStart
from binlake.spark_sink.events.source import read_stream
from binlake.spark_sink.hadoop_files import HadoopFiles
from binlake.spark_sink.lake import tables as lake_tables
from binlake.spark_sink.layout import CHANGELOG_VERSION
from binlake.spark_sink.mirror import batch as mirror_batch
from binlake.spark_sink.mirror.apply import SCHEDULER_POOL
from binlake.spark_sink.mirror.batch import MirrorReport
from binlake.spark_sink.observe.listener import SinkListener
from binlake.spark_sink.observe.metrics import MIRROR_QUERY_NAME, QUERY_NAME, SinkMetrics
from binlake.spark_sink.settings import SinkSettings, TriggerKind

log = logging.getLogger("binlake.sink")


@dataclass(frozen=True, slots=True)
class AppIds:
    """The Delta transaction app ids of the two queries, as their checkpoints hold them (``app_ids``)."""

    changelog: str
    mirrors: str
    writer: WriterStart | None = None
    """A new changelog checkpoint continuing the changelog writer without Spark (``writer_lake``)."""


@dataclass(slots=True)
class SinkQueries:
    """The sink's queries: the changelog query, and the mirror query with ``mirrors=follow``.

    With the available-now trigger the mirror query starts once the changelog
    query has finished (``then``), so a finished run leaves the mirrors caught up
    with everything the changelog holds.
    """

    changelog: StreamingQuery | None
    """None with ``queries=mirrors``: another process runs it."""
    mirrors: StreamingQuery | None = None
    then: Callable[[], StreamingQuery] | None = None
    """Available-now: starts the mirror query, called by ``over`` when the changelog query has ended well."""
    available_now: bool = False
    """The queries stop by themselves when caught up (the sink ends when all have), rather than run until stopped."""
    app_ids: AppIds | None = None
    tails: Callable[[bool], None] | None = None
    """MERGEs the mirrors' deferred tails between batches (``mirror.tails``): all of them (True), or those due."""
    _flushed: bool = False

    def all(self) -> list[StreamingQuery]:
        return [query for query in (self.changelog, self.mirrors) if query is not None]

    def over(self) -> bool:
        """Whether the sink has ended: a query failed, or (processing-time) one stopped, or (available-now)
        every query has finished. Starts the pending mirror query when the changelog query is done."""
        if self.error() is not None:
            return True
        if self.then is not None:
            if self.changelog is not None and self.changelog.isActive:
                return False
            self.mirrors, self.then = self.then(), None
        active = [query.isActive for query in self.all()]
        ended = not any(active) if self.available_now else not all(active)
        if ended and self.available_now and self.tails is not None and not self._flushed:
            self._flushed = True
            self.tails(True)  # a finished run leaves the mirrors caught up: no tail deferred
        return ended

    def wait(self, timeout_s: int) -> bool:
        """Wait up to ``timeout_s`` seconds for the sink to end (``over``); True if it has."""
        deadline = time.monotonic() + timeout_s
        while not self.over():
            if time.monotonic() >= deadline:
                return False
            active = [query for query in self.all() if query.isActive]
            if self.tails is not None and self.mirrors is not None and self.mirrors.isActive:
                self.tails(False)  # the tails due, when no mirror batch runs (the input may be idle)
            if active:
                active[-1].awaitTermination(1)  # the mirrors' while both run: the changelog query may end first
            else:
                time.sleep(0.1)  # between the changelog query's end and the mirror query's start (``over``)
        return True

    def stop(self, grace_s: float = 0.0) -> None:
        """Stop every query, after waiting up to ``grace_s`` seconds for the micro-batches in progress to end.

        A batch still open then is abandoned (its commits are idempotent, and it runs again at the next start);
        the wait makes that rare: a query between triggers stops at once.
        """
        self.then = None
        deadline = time.monotonic() + grace_s
        # Each query stops the moment it is seen between two triggers: one whose batches take longer than its
        # trigger interval starts the next at once, so both idle at the same moment may never come in time.
        pending = self.all()
        while pending and time.monotonic() < deadline:
            for query in [q for q in pending if not _in_trigger(q)]:
                query.stop()
                pending.remove(query)
            if pending:
                time.sleep(0.05)
        for query in pending:
            query.stop()

    def error(self) -> str | None:
        """The first failure of a query, or None."""
        for query in self.all():
            failure = query.exception()
            if failure is not None:
                return f"{query.name}: {failure}"
        return None


def _in_trigger(query: StreamingQuery) -> bool:
    """Whether the query is running a trigger (a micro-batch, or looking for one) right now."""
    return bool(query.isActive and query.status.get("isTriggerActive"))


class Hooks(TypedDict, total=False):
    """What a caller of ``start`` / ``run`` may follow the sink with."""

    on_batch: Callable[[BatchReport], None] | None
    """Called with each changelog batch's report once its commits are visible."""
    on_mirror_batch: Callable[[MirrorReport], None] | None
    """Called with each mirror batch's report once its commits are visible."""
    metrics: SinkMetrics | None
    """Fed each batch's rows, quarantine and freshness (and, through ``run``'s listener, the query metrics)."""


def start(spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings, **hooks: Unpack[Hooks]) -> SinkQueries:
    """Start the sink's queries: the changelog query and, with ``mirrors=follow``, the mirror query
    (``queries``: both, or the one this process runs).

    Offsets live in each query's checkpoint and every commit is idempotent per
    batch id. ``metrics`` gets each batch's rows, quarantine and freshness once
    its commits are visible; the query-level metrics need ``attach_listener`` as well.
    With the available-now trigger the mirror query starts when the changelog
    query has finished, from ``SinkQueries.wait``. ``queries=mirrors`` needs the
    changelog to exist (``changelog_exists``): the changelog's process makes it.
    """
    on_batch, on_mirror_batch, metrics = hooks.get("on_batch"), hooks.get("on_mirror_batch"), hooks.get("metrics")
    runs_changelog = settings.queries != "mirrors"
    runs_mirrors = settings.mirrors == "follow" and settings.queries != "changelog"
    if runs_changelog:
        version = ensure_table(spark, settings.changelog_uri(), list(settings.changelog_partition_by))
    elif not changelog_exists(spark, settings):
        raise RuntimeError(
            f"no changelog at {settings.changelog_uri()} yet: BINLAKE_SINK_QUERIES=mirrors reads the changelog "
            "another sink process (BINLAKE_SINK_QUERIES=changelog) writes; start that one with the same lake"
        )
    ids = owned_app_ids(spark, settings)
    changelog_query = (
        start_changelog(
            spark,
            settings,
            kafka,
            ids.changelog,
            version=version,
            on_batch=on_batch,
            metrics=metrics,
            starting_offsets=None if ids.writer is None else writer_start(settings, kafka, ids.writer),
        )
        if runs_changelog
        else None
    )
    queries = SinkQueries(changelog_query, available_now=settings.trigger == "available-now", app_ids=ids)
    if runs_mirrors:
        lock = threading.Lock()

        def mirrors() -> StreamingQuery:
            return start_mirrors(spark, settings, ids.mirrors, on_batch=on_mirror_batch, metrics=metrics, lock=lock)

        def flush_tails(every: bool) -> None:
            flush_mirror_tails(spark, settings, ids.mirrors, lock, every=every, metrics=metrics)

        queries.tails = flush_tails

        if settings.trigger == "available-now" and changelog_query is not None:
            queries.then = mirrors
        else:
            queries.mirrors = mirrors()
    return queries


def changelog_exists(spark: SparkSession, settings: SinkSettings) -> bool:
    """Whether the lake's changelog table exists (its process has made it)."""
    return delta.exists(spark, settings.changelog_uri())


def owned_app_ids(spark: SparkSession, settings: SinkSettings) -> AppIds:
    """Each query's app id from its checkpoint, after checking the lake holds no commits of unknown ids.

    Raises ``app_ids.LakeOwnershipError`` (with what to do) where the lake was written from another
    checkpoint; writes the id file of a new checkpoint, so it exists before the query's first commit.
    """
    configured = settings.app_id
    log_id = app_ids.resolve(spark, settings.checkpoint(), configured=configured, legacy=settings.legacy_app_id())
    mirror_id = app_ids.resolve(
        spark,
        settings.mirror_checkpoint(),
        configured=f"{configured}.mirrors" if configured else None,
        legacy=settings.legacy_mirror_app_id(),
        writer=app_ids.MIRROR_WRITER_ID,
    )
    mirror_tables = [
        uri
        for entry in lake_tables.source_tables(spark, settings)
        for uri in (entry.mirror, entry.tombstones, entry.history)
        if uri is not None
    ]
    if delta.exists(spark, settings.tombstones_uri()):
        mirror_tables.append(settings.tombstones_uri())
    log_tables = [settings.changelog_uri(), settings.quarantine_uri()]
    own_log = settings.queries != "mirrors"
    writer = None
    if own_log:
        # A lake the changelog writer without Spark wrote: a new checkpoint continues from its offsets.
        writer = writer_lake.continue_writer(spark, log_id, *log_tables, topic=settings.topic, known=mirror_id.known())
    # Each process writes only the id file of the query it runs (queries=changelog / mirrors): two processes
    # starting at once on a new lake must not each make, and write, the other's id.
    own_mirrors = settings.queries != "changelog"
    if settings.mirrors == "inline":  # the changelog query writes the mirrors too
        app_ids.check(spark, log_id, log_tables + mirror_tables, known=mirror_id.known(), adopt=settings.adopt_lake)
    else:
        if own_log:
            app_ids.check(spark, log_id, log_tables, known=mirror_id.known(), adopt=settings.adopt_lake)
        if own_mirrors:
            app_ids.check(spark, mirror_id, mirror_tables, known=log_id.known(), adopt=settings.adopt_lake)
            app_ids.keep(spark, mirror_id)
            if mirror_id.writer:
                log.warning(
                    "mirror checkpoint %s was written by the mirror writer without Spark: the mirror query "
                    "continues its batches under its app id %s",
                    mirror_id.checkpoint,
                    mirror_id.ident.app_id,
                )
                writer_lake.take_over_mirror_checkpoint(spark, mirror_id)
    if own_log:
        app_ids.keep(spark, log_id)
    for resolved in (log_id, mirror_id):
        if resolved.foreign:
            log.warning(
                "checkpoint %s adopts the lake's commits of app ids %s (BINLAKE_SINK_ADOPT_LAKE)",
                resolved.checkpoint,
                ", ".join(resolved.foreign),
            )
    return AppIds(log_id.ident.app_id, mirror_id.ident.app_id, writer)


def writer_start(settings: SinkSettings, kafka: KafkaSettings, writer: WriterStart) -> str:
    """The changelog query's ``startingOffsets`` on the changelog writer's lake (every partition of the topic:
    the Kafka source wants them all), logged."""
    partitions = writer_lake.topic_partitions(kafka, settings.topic)
    starting = writer.starting_offsets(settings.topic, partitions)
    log.warning(
        "the changelog was written by the changelog writer without Spark (app ids %s): the new checkpoint %s "
        "adopts them and starts at the next offsets they record, %s (-2: the earliest)",
        ", ".join(writer.adopted),
        settings.checkpoint(),
        starting,
    )
    return starting


def start_changelog(
    spark: SparkSession,
    settings: SinkSettings,
    kafka: KafkaSettings,
    app_id: str,
    *,
    version: int = CHANGELOG_VERSION,
    on_batch: Callable[[BatchReport], None] | None = None,
    metrics: SinkMetrics | None = None,
    starting_offsets: str | None = None,
) -> StreamingQuery:
    """The unified topic -> decode -> quarantine and changelog (and the mirrors with ``mirrors=inline``).

    ``version``: the changelog's layout (``ensure_table``); a lake of an earlier release keeps its own.
    ``starting_offsets``: where a new checkpoint starts instead of ``settings.starting_offsets`` (``writer_start``).
    """

    frontier = Frontier()  # this query's own: a new start asks the changelog again
    files = HadoopFiles(spark)
    checkpoint = settings.checkpoint()

    def each_batch(frame: DataFrame, batch_id: int) -> None:
        # The batch's offsets from the offset log (a few ms): no job over its records to find them.
        start = (
            offset_log.kafka_offsets(files.read(f"{checkpoint}/offsets/{batch_id - 1}"))
            if batch_id > 0
            else offset_log.initial_kafka_offsets(files.read(f"{checkpoint}/sources/0/0"))
        )
        end = offset_log.kafka_offsets(files.read(f"{checkpoint}/offsets/{batch_id}"))
        ranges = offset_log.kafka_ranges(start, end)
        report = process(settings, app_id, frame, batch_id, version=version, frontier=frontier, ranges=ranges)
        if report.visible_at_s is None:
            report.visible_at_s = time.time()  # the changelog commit is visible by now
        if metrics is not None:
            metrics.observe_batch(report)
        log.info(
            "batch %d: %d changelog rows, %d quarantined, tables %s",
            batch_id,
            report.changelog_rows,
            report.quarantined,
            ",".join(report.tables),
        )
        if on_batch is not None:
            on_batch(report)

    writer = (
        read_stream(spark, settings, kafka, starting_offsets=starting_offsets)
        .writeStream.foreachBatch(guarded(QUERY_NAME, each_batch))
        .option("checkpointLocation", settings.checkpoint())
        .queryName(QUERY_NAME)
    )
    return _started(spark, writer, settings.trigger, settings.trigger_interval_s, pool="changelog")


def start_mirrors(
    spark: SparkSession,
    settings: SinkSettings,
    app_id: str,
    *,
    on_batch: Callable[[MirrorReport], None] | None = None,
    metrics: SinkMetrics | None = None,
    lock: threading.Lock | None = None,
) -> StreamingQuery:
    """The changelog (Delta streaming source) -> mirrors and history tables (``mirror.batch``). ``lock``: held
    by each batch, so no flush of deferred tails (``flush_mirror_tails``) runs beside it."""
    held = lock if lock is not None else threading.Lock()

    def each_batch(frame: DataFrame, batch_id: int) -> None:
        started = time.time()
        with held:
            report = mirror_batch.process(settings, app_id, frame, batch_id)
        report.started_at_s, report.visible_at_s = started, time.time()
        if metrics is not None:
            metrics.observe_mirror_batch(report)
        log.info("mirror batch %d: %d changelog rows, tables %s", batch_id, report.rows, ",".join(report.tables))
        if on_batch is not None:
            on_batch(report)

    reader = spark.readStream.format("delta")
    if settings.mirror_max_files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", str(settings.mirror_max_files_per_trigger))
    writer = (
        reader.load(settings.changelog_uri())
        .writeStream.foreachBatch(guarded(MIRROR_QUERY_NAME, each_batch))
        .option("checkpointLocation", settings.mirror_checkpoint())
        .queryName(MIRROR_QUERY_NAME)
    )
    return _started(spark, writer, settings.trigger, settings.mirror_trigger_interval_s, pool="mirrors")


def flush_mirror_tails(
    spark: SparkSession,
    settings: SinkSettings,
    app_id: str,
    lock: threading.Lock,
    *,
    every: bool,
    metrics: SinkMetrics | None = None,
) -> None:
    """MERGE the deferred tails (``mirror.batch.flush``: all, or those due) unless a mirror batch runs."""
    if not lock.acquire(blocking=every):
        return  # a batch runs: it MERGEs what is due itself
    try:
        if every or settings.mirror_defer_rows > 0:
            report = mirror_batch.flush(spark, settings, app_id, every=every)
            if report is not None:
                log.info("mirror tails of batch %d merged: tables %s", report.batch_id, ",".join(report.tables))
                if metrics is not None:
                    metrics.observe_mirror_tails(report)
    finally:
        lock.release()


def _started(
    spark: SparkSession, writer: DataStreamWriter, trigger: TriggerKind, interval_s: float, *, pool: str
) -> StreamingQuery:
    if trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{interval_s} seconds")
    # A query's micro-batch thread inherits the local properties of the thread that starts it: its jobs
    # run in their own fair-scheduler pool, so a long mirror MERGE does not hold back the changelog's tasks.
    context = spark.sparkContext
    context.setLocalProperty(SCHEDULER_POOL, pool)
    try:
        return writer.start()
    finally:
        context.setLocalProperty(SCHEDULER_POOL, "default")  # Spark's root pool: the caller's own jobs


def run(spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings, **hooks: Unpack[Hooks]) -> None:
    """Run until the queries end (available-now: when caught up); raise if one failed.

    Available-now runs the changelog query to its end first, then the mirror
    query over everything the changelog holds by then, so a finished run leaves
    the mirrors caught up. With ``metrics``, a listener feeds the query-level
    metrics too; ``run`` returns once the listener has received the run's last
    progress event.
    """
    metrics = hooks.get("metrics")
    listener = attach_listener(spark, metrics) if metrics is not None else None
    queries: SinkQueries | None = None
    try:
        queries = start(spark, settings, kafka, **hooks)
        while not queries.wait(60):
            pass
        queries.stop()
    finally:
        if listener is not None:
            detach_listener(spark, listener, None if queries is None else _run_id(queries))
    error = queries.error()
    if error is not None:
        raise RuntimeError(f"the sink query failed: {error}")


def _run_id(queries: SinkQueries) -> str | None:
    """The run whose termination event the listener waits for: the changelog query's, else the mirrors'."""
    first = queries.changelog or queries.mirrors
    return None if first is None else str(first.runId)


def attach_listener(spark: SparkSession, metrics: SinkMetrics) -> SinkListener:
    """Register a listener feeding ``metrics`` from the sink query's progress (rates, durations, Kafka lag)."""
    listener = SinkListener(metrics)
    spark.streams.addListener(listener)
    return listener


def detach_listener(
    spark: SparkSession, listener: SinkListener, run_id: str | None, *, timeout_s: float = 30.0
) -> None:
    """Wait for the run's termination event (so its progress events are all in), then unregister."""
    if run_id is not None and not listener.wait_terminated(run_id, timeout_s):
        log.warning("the listener got no termination event of run %s within %.0f s", run_id, timeout_s)
    spark.streams.removeListener(listener)
