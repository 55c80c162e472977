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
import logging
import time
from typing import TYPE_CHECKING, Any

from binlake.shared import logs
from binlake.shared.cli import stopping
from binlake.shared.config.settings import KafkaSettings, kafka_settings, load
from binlake.spark_sink.settings import SinkSettings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
