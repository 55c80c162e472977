"""``binlake sink``: the Spark sink, the unified topic -> changelog and mirror Delta tables, exactly once.

A PySpark Structured Streaming job (local master by default). Configuration
comes from ``BINLAKE_SINK_*`` and ``BINLAKE_KAFKA_*`` environment variables
(docs/spark-sink.md); the options below override them. Spark connector
packages are resolved from Maven Central once into the Ivy cache
(``BINLAKE_SINK_SPARK_IVY_DIR``). Stops cleanly on SIGTERM or SIGINT (the current
micro-batch finishes or is replayed from the checkpoint on the next start).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import logging
import time
from typing import TYPE_CHECKING, Any

from binlake.shared import logs
from binlake.shared.cli import stopping
from binlake.shared.config.settings import KafkaSettings, kafka_settings, load
from binlake.spark_sink.settings import SinkSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from binlake.spark_sink.observe.metrics import SinkMetrics
    from binlake.spark_sink.observe.server import MetricsServer


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--topic", metavar="TOPIC", help="unified topic (BINLAKE_SINK_TOPIC)")
    parser.add_argument("--lake", dest="lake_uri", metavar="URI", help="lake root (BINLAKE_SINK_LAKE_URI)")
    parser.add_argument("--checkpoint", dest="checkpoint_uri", metavar="URI", help="BINLAKE_SINK_CHECKPOINT_URI")
    parser.add_argument("--app-id", metavar="ID", help="Delta txnAppId (BINLAKE_SINK_APP_ID)")
    parser.add_argument(
        "--adopt-lake",
        action="store_const",
        const=True,
        help="a new checkpoint takes over a lake written from another, deleted one (BINLAKE_SINK_ADOPT_LAKE)",
    )
    parser.add_argument("--master", metavar="URL", help="Spark master (BINLAKE_SINK_MASTER)")
    parser.add_argument("--trigger", choices=["processing-time", "available-now"], help="BINLAKE_SINK_TRIGGER")
    parser.add_argument(
        "--trigger-interval",
        dest="trigger_interval_s",
        type=float,
        metavar="S",
        help="seconds between micro-batches (BINLAKE_SINK_TRIGGER_INTERVAL_S)",
    )
    parser.add_argument(
        "--max-offsets-per-trigger",
        type=int,
        metavar="N",
        help="records per micro-batch (BINLAKE_SINK_MAX_OFFSETS_PER_TRIGGER)",
    )
    parser.add_argument("--shuffle-partitions", type=int, metavar="N", help="BINLAKE_SINK_SHUFFLE_PARTITIONS")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (BINLAKE_KAFKA_BOOTSTRAP_SERVERS)")
    parser.add_argument(
        "--metrics-port", type=int, metavar="PORT", help="/metrics, /healthz, /readyz (BINLAKE_SINK_METRICS_PORT)"
    )


def load_settings(overrides: dict[str, Any]) -> tuple[SinkSettings, KafkaSettings]:
    given = dict(overrides)
    bootstrap = given.pop("bootstrap_servers", None)
    return load(SinkSettings, **given), kafka_settings(bootstrap)


def run(args: argparse.Namespace) -> int:
    # SIGTERM and SIGINT are held since ``binlake``'s first line (shared.cli.stopping), again here for a
    # caller that skipped main: a stop asked before the queries run is checked after each step of the start.
    stopping.hold()
    names = ["topic", "lake_uri", "checkpoint_uri", "app_id", "adopt_lake", "master", "trigger", "trigger_interval_s"]
    names += ["max_offsets_per_trigger", "shuffle_partitions", "bootstrap_servers", "metrics_port"]
    settings, kafka = load_settings({name: getattr(args, name) for name in names})
    logs.setup("INFO")
    log = logging.getLogger("binlake.sink")
    logging.getLogger(PY4J_LOGGER).addFilter(InterruptedAtStop())

    from binlake.shared.kafka import access
    from binlake.spark_sink import job
    from binlake.spark_sink.observe.metrics import SinkMetrics
    from binlake.spark_sink.observe.server import MetricsServer
    from binlake.spark_sink.session import build_session

    if _stop_asked(log, "before Spark started"):
        return 0
    # Credentials the brokers refuse, or a broker certificate not trusted, stop the sink here, in a second and
    # with what to fix, rather than after Spark's start in a failed query's stack trace.
    asyncio.run(access.diagnose(kafka))
    metrics = SinkMetrics()
    server = MetricsServer(metrics.registry)
    port = server.start(settings.metrics_host, settings.metrics_port)
    if settings.changelog_writer == "python" or settings.mirror_writer == "python":
        run_one = _run_writer if settings.changelog_writer == "python" else _run_mirror_writer
        try:
            return run_one(settings, kafka, log, metrics=metrics, server=server, port=port)
        finally:
            server.ready = False
            server.stop()
    error: str | None = None
    try:
        spark = build_session(settings)  # seconds: the JVM, the connector packages
        # pyspark's SparkContext took SIGINT (cancel the jobs, raise KeyboardInterrupt with a traceback): take it back.
        stopping.hold()
        try:
            if _stop_asked(log, "while Spark started"):
                return 0
            if settings.queries == "mirrors" and not _changelog_made(spark, settings, log, server):
                return 0  # stopped while waiting
            job.attach_listener(spark, metrics)
            queries = job.start(spark, settings, kafka, metrics=metrics)
            server.ready = True
            ids = queries.app_ids
            app_id = None if ids is None else ids.mirrors if settings.queries == "mirrors" else ids.changelog
            started = {
                "topic": settings.topic,
                "lake": settings.lake(),
                "queries": settings.queries,
                "app_id": app_id,
                "metrics_port": port,
            }
            log.info("sink started", extra=started)
            try:
                while not queries.wait(1):
                    server.beat()  # the driver is alive and the queries run
                    if stopping.requested() is not None:
                        log.info("stopping on signal %d", stopping.requested())
                        break
                # On a signal (the batches in progress may end first), or because one query ended: the sink
                # runs both or none.
                queries.stop(settings.stop_grace_s if stopping.requested() is not None else 0.0)
            finally:
                server.ready = False
                error = queries.error()
        finally:
            spark.stop()
    finally:
        server.ready = False
        server.stop()
    if error is not None:
        log.error("the sink query failed: %s", error)
        return 1
    return 0


WRITER_APP_ID = "binlake-writer"
"""The changelog writer's app id where ``BINLAKE_SINK_APP_ID`` is not set: its progress lives in the tables'
Delta logs under ``<app id>/<topic>/<partition>``, not in a checkpoint, so one fixed id per lake serves."""


def _run_writer(
    settings: SinkSettings,
    kafka: KafkaSettings,
    log: logging.Logger,
    *,
    metrics: SinkMetrics,
    server: MetricsServer,
    port: int,
) -> int:
    """``changelog_writer=python``: the changelog written without Spark until a signal (or, available-now, until
    caught up); the same metrics, health and readiness as the Spark sink's changelog process."""
    from binlake.spark_sink.changelog import writer
    from binlake.spark_sink.changelog.batch import BatchReport

    app_id = settings.app_id or WRITER_APP_ID
    batch_ids = itertools.count()

    def on_batch(batch: writer.WriterBatch) -> None:
        written = batch.written
        report = BatchReport(
            next(batch_ids),
            records=batch.records,
            changelog_rows=written.changelog_rows,
            quarantined=written.quarantined,
            stats=written.stats,
            visible_at_s=written.visible_at_s,
        )
        metrics.observe_batch(report)
        seconds = batch.ended_at_s - batch.started_at_s
        offsets = {settings.topic: {str(p): o for p, o in batch.read_to.items()}}
        latest = {settings.topic: {str(p): o for p, o in batch.latest.items()}}
        # The Kafka source's progress, as the Spark sink's listener reports it: batches, durations, lag.
        metrics.observe_progress(
            {
                "processedRowsPerSecond": batch.records / seconds if seconds > 0 else None,
                "durationMs": {"triggerExecution": int(seconds * 1000)},
                "sources": [{"endOffset": json.dumps(offsets), "latestOffset": json.dumps(latest)}],
            }
        )
        server.beat()

    async def main() -> None:
        stop = asyncio.Event()

        async def watch() -> None:
            while stopping.requested() is None:
                await asyncio.sleep(0.2)
            log.info("stopping on signal %d", stopping.requested())
            stop.set()

        watcher = asyncio.create_task(watch())
        try:
            await writer.run(
                settings,
                kafka,
                app_id,
                stop=stop,
                on_batch=on_batch,
                on_tick=server.beat,  # /healthz: the writer's loop comes round (a stuck write stops it)
                until_caught_up=settings.trigger == "available-now",
            )
        finally:
            watcher.cancel()

    server.ready = True
    metrics.query_active.set(1)
    started = {"topic": settings.topic, "lake": settings.lake(), "queries": "changelog", "app_id": app_id}
    log.info("sink started", extra={**started, "changelog_writer": "python", "metrics_port": port})
    try:
        asyncio.run(main())
    except Exception as exc:  # reported as the Spark sink reports a failed query: exit 1
        log.error("the changelog writer failed: %s", exc, exc_info=True)
        return 1
    finally:
        metrics.query_active.set(0)
    return 0


MIRROR_WRITER_APP_ID = "binlake-mirror-writer"
"""The mirror writer's app id where ``BINLAKE_SINK_APP_ID`` is not set (``<app id>.mirrors`` where it is): the
transaction id of its commits; its batches are numbered in the mirror checkpoint."""


def _run_mirror_writer(
    settings: SinkSettings,
    kafka: KafkaSettings,
    log: logging.Logger,
    *,
    metrics: SinkMetrics,
    server: MetricsServer,
    port: int,
) -> int:
    """``mirror_writer=python``: the mirrors written without Spark until a signal (or, available-now, until they
    hold the whole changelog); the mirror metrics, health and readiness of the Spark mirror process."""
    import threading

    from binlake.spark_sink.mirror import follower
    from binlake.spark_sink.mirror.batch import MirrorReport

    del kafka  # the mirrors read the changelog, not the topic
    app_id = f"{settings.app_id}.mirrors" if settings.app_id else MIRROR_WRITER_APP_ID

    def on_batch(batch: follower.FollowedBatch) -> None:
        applied = batch.applied
        report = MirrorReport(
            batch.batch_id, rows=applied.rows, tables=applied.tables, stats=applied.stats, steps=batch.steps
        )
        report.started_at_s, report.visible_at_s = batch.started_at_s, batch.ended_at_s
        metrics.observe_mirror_batch(report)
        server.beat()

    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.2):
            if stopping.requested() is not None:
                log.info("stopping on signal %d", stopping.requested())
                stop.set()

    watcher = threading.Thread(target=watch, name="binlake-stop-watch", daemon=True)
    watcher.start()
    server.ready = True
    metrics.query_active.set(1)
    started = {"topic": settings.topic, "lake": settings.lake(), "queries": "mirrors", "app_id": app_id}
    log.info("sink started", extra={**started, "mirror_writer": "python", "metrics_port": port})
    try:
        follower.run(
            settings,
            app_id,
            stop=stop,
            on_batch=on_batch,
            on_tick=server.beat,
            until_caught_up=settings.trigger == "available-now",
        )
    except Exception as exc:  # reported as the Spark sink reports a failed query: exit 1
        log.error("the mirror writer failed: %s", exc, exc_info=True)
        return 1
    finally:
        stop.set()
        metrics.query_active.set(0)
    return 0


PY4J_LOGGER = "py4j.clientserver"
INTERRUPTED_AT_STOP = "a micro-batch in progress was cut short by the stop; it runs again at the next start"


class InterruptedAtStop(logging.Filter):
    """After a stop was asked, py4j's ERROR for a micro-batch the stop interrupted (the JVM interrupts the
    query's thread inside the batch's Python code) is expected: one INFO line, without the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR or stopping.requested() is None:
            return True
        error = record.exc_info[1] if record.exc_info else None
        if error is None or "Interrupted" not in str(error):
            return True
        record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        record.msg, record.args = INTERRUPTED_AT_STOP, ()
        record.exc_info, record.exc_text = None, None
        return True


def _changelog_made(spark: SparkSession, settings: SinkSettings, log: logging.Logger, server: MetricsServer) -> bool:
    """queries=mirrors: wait until the changelog's process has made the changelog; False if stopped first."""
    from binlake.spark_sink import job

    waited = False
    while not job.changelog_exists(spark, settings):
        if _stop_asked(log, "while waiting for the changelog"):
            return False
        if not waited:
            log.info("waiting for the changelog at %s (its sink process makes it)", settings.changelog_uri())
            waited = True
        server.beat()
        time.sleep(2)
    return True


def _stop_asked(log: logging.Logger, when: str) -> bool:
    signum = stopping.requested()
    if signum is not None:
        log.info("stopping on signal %d %s", signum, when)
    return signum is not None
