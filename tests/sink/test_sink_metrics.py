"""The Spark sink's metrics without Spark: progress parsing, weighted histogram, batch stats, bench helpers."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from pyspark.sql.streaming.listener import StreamingQueryProgress

from binlake.shared.codec import avro
from binlake.spark_sink.changelog.batch import BatchReport
from binlake.spark_sink.observe.batch_stats import BatchStats, TableOp, TimeBucket
from binlake.spark_sink.observe.metrics import SinkMetrics, WeightedHistogram, kafka_lag
from tests.bench import sink_bench

pytestmark = pytest.mark.unit

TOPIC = "binlake.events"


def _progress(**overrides: Any) -> dict[str, Any]:
    """A progress document shaped like the Kafka source's (StreamingQueryProgress.json)."""
    document: dict[str, Any] = {
        "id": "0b6f9a3e-7d51-4c62-9f0e-0c1a2b3c4d5e",
        "runId": "1c7f0b4f-8e62-4d73-a01f-1d2b3c4d5e6f",
        "name": "binlake-sink",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "batchId": 3,
        "batchDuration": 2500,
        "numInputRows": 5000,
        "inputRowsPerSecond": 4000.0,
        "processedRowsPerSecond": 2000.0,
        "durationMs": {"addBatch": 2300, "latestOffset": 20, "triggerExecution": 2500, "walCommit": 40},
        "stateOperators": [],
        "sources": [
            {
                "description": f"KafkaV2[Subscribe[{TOPIC}]]",
                "startOffset": {TOPIC: {"0": 0, "1": 0}},
                "endOffset": {TOPIC: {"0": 2500, "1": 2500}},
                "latestOffset": {TOPIC: {"0": 2600, "1": 2500}},
                "numInputRows": 5000,
                "inputRowsPerSecond": 4000.0,
                "processedRowsPerSecond": 2000.0,
                "metrics": {
                    "avgOffsetsBehindLatest": "50.0",
                    "maxOffsetsBehindLatest": "100",
                    "minOffsetsBehindLatest": "0",
                },
            }
        ],
        "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
    }
    document.update(overrides)
    return document


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_weighted_histogram_counts_each_observation_count_times() -> None:
    registry = CollectorRegistry()
    histogram = WeightedHistogram("x_seconds", "test", (1, 5), registry=registry)
    histogram.observe(0.5, 3)
    histogram.observe(1.0, 2)  # a value equal to a bound belongs to that bucket (le)
    histogram.observe(7.0, 1)
    histogram.observe(2.0, 0)  # nothing
    assert _value(registry, "x_seconds_bucket", le="1.0") == 5
    assert _value(registry, "x_seconds_bucket", le="5.0") == 5
    assert _value(registry, "x_seconds_bucket", le="+Inf") == 6
    assert _value(registry, "x_seconds_count") == 6
    assert _value(registry, "x_seconds_sum") == pytest.approx(0.5 * 3 + 2.0 + 7.0)
    assert b"# TYPE x_seconds histogram" in generate_latest(registry)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        WeightedHistogram("x_seconds", "again", (1,), registry=registry)


def test_kafka_lag_from_offset_json() -> None:
    end = '{"t": {"0": 10, "1": 20}, "u": {"0": 5}}'
    latest = '{"t": {"0": 15, "1": 20}}'
    assert kafka_lag(end, latest) == {("t", "0"): 5, ("t", "1"): 0}
    assert kafka_lag(end, None) == {}
    assert kafka_lag(end, "None") == {}
    assert kafka_lag("", latest) == {}


def test_progress_feeds_rates_durations_and_lag() -> None:
    metrics = SinkMetrics()
    # The listener gets StreamingQueryProgress objects: the offsets are JSON strings there.
    metrics.observe_progress(StreamingQueryProgress.fromJson(_progress()))
    metrics.observe_progress(StreamingQueryProgress.fromJson(_progress(numInputRows=0, inputRowsPerSecond=math.nan)))
    r = metrics.registry
    assert _value(r, "binlake_sink_batches_total") == 2
    assert _value(r, "binlake_sink_input_rows_per_second") == 4000.0  # NaN is not a rate: the last one stays
    assert _value(r, "binlake_sink_processed_rows_per_second") == 2000.0
    assert _value(r, "binlake_sink_batch_duration_seconds_count") == 2
    assert _value(r, "binlake_sink_batch_duration_seconds_sum") == pytest.approx(5.0)
    assert _value(r, "binlake_sink_batch_phase_seconds", phase="addBatch") == pytest.approx(2.3)
    assert _value(r, "binlake_sink_kafka_lag", topic=TOPIC, partition="0") == 100
    assert _value(r, "binlake_sink_kafka_lag", topic=TOPIC, partition="1") == 0
    assert _value(r, "binlake_sink_kafka_offsets_behind_latest", stat="max") == 100
    assert _value(r, "binlake_sink_kafka_offsets_behind_latest", stat="avg") == 50


def _stats() -> BatchStats:
    return BatchStats(
        by_table_op={
            ("shop.a", "INSERT"): TableOp(3, 1_000_000, 1_000_250),
            ("shop.a", "UPDATE"): TableOp(2, 1_000_100, 1_002_150),
            ("shop.b", "DELETE"): TableOp(1, 1_000_050, 1_000_050),
            ("shop.c", "DDL"): TableOp(1, None, None),
        },
        event_time=[TimeBucket(1_000_000, 100, 4), TimeBucket(1_000_200, 100, 1), TimeBucket(1_002_100, 100, 1)],
        without_ts=1,
    )


def test_batch_stats_summaries() -> None:
    stats = _stats()
    assert stats.rows == 7
    assert stats.newest_ts_ms() == {"shop.a": 1_002_150, "shop.b": 1_000_050}
    assert stats.oldest_ts_ms() == 1_000_000
    # Freshness at the bucket midpoint; an event "younger" than the commit (clock skew) counts as 0 s.
    assert list(stats.freshness(1_002.05)) == [(2.0, 4), (pytest.approx(1.8), 1), (0.0, 1)]


def test_batch_feeds_rows_quarantine_freshness_and_last_event() -> None:
    metrics = SinkMetrics()
    report = BatchReport(7, records=9, changelog_rows=7, quarantined=2, stats=_stats(), visible_at_s=1_002.05)
    metrics.observe_batch(report)
    r = metrics.registry
    assert _value(r, "binlake_sink_changelog_rows_total", table="shop.a", op="INSERT") == 3
    assert _value(r, "binlake_sink_changelog_rows_total", table="shop.c", op="DDL") == 1
    assert _value(r, "binlake_sink_quarantined_rows_total") == 2
    assert _value(r, "binlake_sink_input_rows_total") == 9
    assert _value(r, "binlake_sink_events_without_ts_total") == 1
    assert _value(r, "binlake_sink_event_freshness_seconds_count") == 6
    assert _value(r, "binlake_sink_event_freshness_seconds_bucket", le="0.25") == 1
    assert _value(r, "binlake_sink_event_freshness_seconds_bucket", le="2.0") == 6
    assert _value(r, "binlake_sink_last_event_timestamp_seconds", table="shop.a") == pytest.approx(1_002.15)
    assert _value(r, "binlake_sink_last_commit_timestamp_seconds") == pytest.approx(1_002.05)
    # A later batch of older events leaves the newest event time where it was.
    older = BatchStats(by_table_op={("shop.a", "INSERT"): TableOp(1, 10, 10)}, event_time=[TimeBucket(0, 100, 1)])
    metrics.observe_batch(BatchReport(8, changelog_rows=1, stats=older, visible_at_s=1_003.0))
    assert _value(r, "binlake_sink_last_event_timestamp_seconds", table="shop.a") == pytest.approx(1_002.15)
    assert _value(r, "binlake_sink_changelog_rows_total", table="shop.a", op="INSERT") == 4


def test_bench_events_patch_ts_ms_like_the_encoder() -> None:
    items = sink_bench.encode_events(60, seed=5)
    assert {item.partition for item in items} <= set(range(sink_bench.PARTITIONS))
    for item in items:
        event = avro.decode(item.with_ts(item.ts_ms))
        assert event.ts_ms == item.ts_ms
        assert avro.encode(dataclasses.replace(event, ts_ms=1_767_225_600_123)) == item.with_ts(1_767_225_600_123)
    with pytest.raises(ValueError, match="does not encode"):
        items[0].with_ts(2**50)


def test_weighted_percentiles() -> None:
    samples = [(3.0, 1), (1.0, 98), (2.0, 1)]
    assert sink_bench.weighted_percentiles(samples, (0.5, 0.99, 1.0)) == [1.0, 2.0, 3.0]
    assert sink_bench.weighted_percentiles([], (0.5,)) == [None]
