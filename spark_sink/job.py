"""The Structured Streaming query: the unified topic -> foreachBatch -> Delta, checkpointed."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from shared.config.settings import KafkaSettings
from spark_sink.batch import BatchReport, process
from spark_sink.metrics import QUERY_NAME, SinkListener, SinkMetrics
from spark_sink.settings import SinkSettings
from spark_sink.source import read_stream

log = logging.getLogger("binlake.sink")


def start(
    spark: SparkSession,
    settings: SinkSettings,
    kafka: KafkaSettings,
    *,
    on_batch: Callable[[BatchReport], None] | None = None,
    metrics: SinkMetrics | None = None,
) -> StreamingQuery:
    """Start the sink's streaming query (offsets in the checkpoint, commits idempotent per batch id).

    ``metrics`` gets each batch's rows, quarantine and freshness once its commits
    are visible; the query-level metrics need ``attach_listener`` as well.
    """
    app_id = settings.txn_app_id()

    def each_batch(frame: DataFrame, batch_id: int) -> None:
        report = process(settings, app_id, frame, batch_id)
        report.visible_at_s = time.time()  # the changelog commit, process's last step, is visible now
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
        read_stream(spark, settings, kafka)
        .writeStream.foreachBatch(each_batch)
        .option("checkpointLocation", settings.checkpoint())
        .queryName(QUERY_NAME)
    )
    if settings.trigger == "available-now":
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger_interval_s} seconds")
    return writer.start()


def run(
    spark: SparkSession,
    settings: SinkSettings,
    kafka: KafkaSettings,
    *,
    on_batch: Callable[[BatchReport], None] | None = None,
    metrics: SinkMetrics | None = None,
) -> None:
    """Run until the query ends (available-now: when caught up); raise if it failed.

    With ``metrics``, a listener feeds the query-level metrics too; ``run``
    returns once the listener has received the run's last progress event.
    """
    listener = attach_listener(spark, metrics) if metrics is not None else None
    query: StreamingQuery | None = None
    try:
        query = start(spark, settings, kafka, on_batch=on_batch, metrics=metrics)
        query.awaitTermination()
    finally:
        if listener is not None:
            detach_listener(spark, listener, None if query is None else query.runId)
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"the sink query failed: {error}")


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
