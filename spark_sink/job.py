"""The Structured Streaming query: the unified topic -> foreachBatch -> Delta, checkpointed."""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from shared.config.settings import KafkaSettings
from spark_sink.batch import BatchReport, process
from spark_sink.settings import SinkSettings
from spark_sink.source import read_stream

log = logging.getLogger("binlake.sink")


def start(
    spark: SparkSession,
    settings: SinkSettings,
    kafka: KafkaSettings,
    *,
    on_batch: Callable[[BatchReport], None] | None = None,
) -> StreamingQuery:
    """Start the sink's streaming query (offsets in the checkpoint, commits idempotent per batch id)."""
    app_id = settings.txn_app_id()

    def each_batch(frame: DataFrame, batch_id: int) -> None:
        report = process(settings, app_id, frame, batch_id)
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
        .queryName("binlake-sink")
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
) -> None:
    """Run until the query ends (available-now: when caught up); raise if it failed."""
    query = start(spark, settings, kafka, on_batch=on_batch)
    query.awaitTermination()
    error = query.exception()
    if error is not None:
        raise RuntimeError(f"the sink query failed: {error}")
