"""The Spark sink's /metrics, scraped over HTTP after a real run, against what the lake holds.

Real broker, real Spark, real Delta: canonical events (and a few unreadable
messages) in a 4-partition unified topic, the sink run with the available-now
trigger in several micro-batches, its listener and batch metrics on one
registry served by ``MetricsServer``. The scraped numbers must equal the
changelog's: rows per (table, op), one freshness observation per event, the
newest event time per table, the quarantined count, the Kafka records read,
and a zero Kafka lag per partition once caught up.
"""

from __future__ import annotations

import asyncio
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.spark_sink import job
from binlake.spark_sink.changelog.batch import BatchReport
from binlake.spark_sink.observe.metrics import SinkMetrics
from binlake.spark_sink.observe.server import MetricsServer
from tests.bench import sink_bench
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

EVENTS = 600
TABLES = 4
GARBAGE = [b'{"not": "avro"}', avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff"]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _samples(text: str) -> Samples:
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _by_label(samples: Samples, name: str, *labels: str) -> dict[tuple[str, ...], float]:
    out: dict[tuple[str, ...], float] = {}
    for (sample, pairs), value in samples.items():
        if sample == name:
            found = dict(pairs)
            out[tuple(found[label] for label in labels)] = value
    return out


async def test_scraped_metrics_match_the_lake(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    topic = kafka_tools.unique("sink-metrics")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: sink_bench.PARTITIONS})
    items = sink_bench.encode_events(EVENTS, seed=3, tables=TABLES)
    await sink_bench.produce(kafka_bootstrap, topic, items)
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, message) for message in GARBAGE])

    metrics = SinkMetrics()
    server = MetricsServer(metrics.registry)
    port = server.start("127.0.0.1", 0)
    try:
        assert _get(port, "/readyz")[0] == 503
        server.ready = True
        lake = (tmp_path / "lake").as_uri()
        settings = sink_settings_for_tests(topic=topic, lake_uri=lake, max_offsets_per_trigger=250)
        reports: list[BatchReport] = []
        started = time.time()
        await asyncio.to_thread(
            job.run, spark, settings, kafka_settings(kafka_bootstrap), on_batch=reports.append, metrics=metrics
        )
        status, text = await asyncio.to_thread(_get, port, "/metrics")
        assert status == 200
        server.beat()  # what the command's wait loop does every second while the query runs
        assert (await asyncio.to_thread(_get, port, "/healthz"))[0] == 200
        assert (await asyncio.to_thread(_get, port, "/readyz"))[0] == 200
    finally:
        server.stop()
    scraped = _samples(text)

    changelog = spark.read.format("delta").load(settings.changelog_uri())
    per_table_op = {
        (row["source_table"], row["op"]): row["count"]
        for row in changelog.groupBy("source_table", "op").count().collect()
    }
    assert sum(per_table_op.values()) == len(items)
    assert len({table for table, _ in per_table_op}) == TABLES
    rows = _by_label(scraped, "binlake_sink_changelog_rows_total", "table", "op")
    assert rows == {key: float(count) for key, count in per_table_op.items()}

    # One freshness observation per event; their mean lies within the events' ages (1 h buckets for old events).
    assert scraped[("binlake_sink_event_freshness_seconds_count", ())] == len(items)
    mean = scraped[("binlake_sink_event_freshness_seconds_sum", ())] / len(items)
    ages = [started - item.ts_ms / 1000 for item in items]
    assert min(ages) - 1800 <= mean <= max(ages) + 1800 + (time.time() - started)
    newest = {row[0]: row[1] for row in changelog.groupBy("source_table").agg(F.max("ts_ms")).collect()}
    last_event = _by_label(scraped, "binlake_sink_last_event_timestamp_seconds", "table")
    assert last_event == {(table,): ts_ms / 1000 for table, ts_ms in newest.items()}

    assert scraped[("binlake_sink_quarantined_rows_total", ())] == len(GARBAGE)
    assert spark.read.format("delta").load(settings.quarantine_uri()).count() == len(GARBAGE)

    # The listener's numbers: every micro-batch, every Kafka record, caught up at the end.
    assert len(reports) >= 3
    assert scraped[("binlake_sink_batches_total", ())] == len(reports)
    assert scraped[("binlake_sink_batch_duration_seconds_count", ())] == len(reports)
    assert scraped[("binlake_sink_input_rows_total", ())] == len(items) + len(GARBAGE)
    lag = _by_label(scraped, "binlake_sink_kafka_lag", "topic", "partition")
    assert lag == {(topic, str(p)): 0.0 for p in range(sink_bench.PARTITIONS)}
    assert scraped[("binlake_sink_kafka_offsets_behind_latest", (("stat", "max"),))] == 0
    assert ("binlake_sink_processed_rows_per_second", ()) in scraped
    assert scraped[("binlake_sink_batch_phase_seconds", (("phase", "addBatch"),))] > 0
    assert scraped[("binlake_sink_query_active", ())] == 0
