"""``changelog.survey``: one aggregation gives a batch's extent and the statistics of its good records.

Real Spark: Kafka-shaped rows (canonical events of several tables, some with
event times minutes, hours and days old, and unreadable messages) decoded as
the sink decodes them. The survey's statistics must equal ``batch_stats.collect``
over the batch's changelog rows (the separate pass it replaces when nothing of
the batch was written before), and its extent must match the records.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import SparkSession

from shared.codec import avro
from spark_sink import batch_stats, changelog
from spark_sink.source import KAFKA_SCHEMA, decode
from tests.bench import sink_bench
from tests.integration.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

NOW_MS = 1_790_000_000_000
AGES_MS = [50, 1_500, 90_000, 600_000, 7_200_000, 3 * 86_400_000]
GARBAGE = [b'{"not": "avro"}', avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff", b"\xc3"]


def test_survey_equals_the_separate_statistics_pass(spark: SparkSession) -> None:
    items = sink_bench.generate(240, seed=3, tables=4)
    stamp = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
    rows: list[tuple[bytes | None, bytes, str, int, int, dt.datetime, int]] = [
        (item.key, item.with_ts(NOW_MS - AGES_MS[i % len(AGES_MS)]), "t", item.partition, i, stamp, 0)
        for i, item in enumerate(items)
    ]
    rows += [(None, value, "t", 1, len(rows) + i, stamp, 0) for i, value in enumerate(GARBAGE)]
    decoded = decode(spark.createDataFrame(rows, KAFKA_SCHEMA)).cache()
    try:
        where, stats = changelog.survey(decoded, ["source_table", "event_date"], now_ms=NOW_MS)
        expected = batch_stats.collect(changelog.changelog_rows(decoded), now_ms=NOW_MS)
    finally:
        decoded.unpersist()

    assert stats == expected
    assert stats.rows == len(items)
    assert len(stats.by_table_op) > 4  # several tables and ops
    assert {b.width_ms for b in stats.event_time} == {100, 1_000, 60_000, 3_600_000}
    assert where.bad == len(GARBAGE)
    offsets = {r.partition: (r.first, r.last) for r in where.ranges}
    for partition in {item.partition for item in items} | {1}:
        mine = [i for i, row in enumerate(rows) if row[3] == partition]
        assert offsets[partition] == (min(mine), max(mine))
    assert where.partitions["source_table"] == sorted({t for t, _op in stats.by_table_op})
    assert len(where.partitions["event_date"]) >= 2
