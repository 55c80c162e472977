"""Tombstones are kept for ``BINLAKE_SINK_TOMBSTONE_RETENTION_HOURS``: both sides of the boundary, on real
Kafka + Spark + Delta.

A key is inserted and deleted; later a change of the key older than its delete arrives (late). Within the
retention its tombstone keeps the change out, whatever the wait. Past the retention the tombstone is dropped
(by the first mirror batch after it, which still reads the floors it pinned before), and a late change
after that applies as if the key had never been deleted; the metrics count the dropped tombstone and the
changes older than the retention.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import Image
from binlake.spark_sink import delta, job
from binlake.spark_sink.observe.metrics import SinkMetrics
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

COLUMNS = [Column("id", "int", "int32"), Column("a", "int", "int32")]
AN_HOUR_AGO_MS = int(time.time() * 1000) - 3_600_000


def _event(op: str, ok: int, image: Image) -> ChangeEvent:
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # valid Op literals
        source=Source("test", "mysql", "r", None, "kept"),
        order_key=f"{ok:020d}",
        ts_ms=AN_HOUR_AGO_MS + ok,  # an hour old: past a retention of seconds, within the default week
        ingest_ts_ms=None,
        primary_key=["id"],
        columns=Columns(COLUMNS),
        before=image if op == "DELETE" else None,
        after=None if op == "DELETE" else image,
        changed_columns=None,
        ddl=None,
        origin=Origin("vendor", 0, ok, 0),
    )


async def _run(bootstrap: str, spark: SparkSession, settings: SinkSettings, events: list[ChangeEvent]) -> SinkMetrics:
    await kafka_tools.produce(bootstrap, settings.topic, [(None, avro.encode(e)) for e in events])
    metrics = SinkMetrics()
    await asyncio.to_thread(job.run, spark, settings, kafka_settings(bootstrap), metrics=metrics)
    return metrics


def _ids(spark: SparkSession, settings: SinkSettings) -> list[int]:
    return sorted(r["id"] for r in spark.read.format("delta").load(settings.mirror_uri("r.kept")).collect())


def _tombstones(spark: SparkSession, settings: SinkSettings) -> list[str]:
    if not delta.exists(spark, settings.tombstones_uri()):
        return []
    frame = spark.read.format("delta").load(settings.tombstones_uri())
    return sorted(r["key"] for r in frame.where(F.col("source_table") == "r.kept").collect())


def _count(metrics: SinkMetrics, name: str) -> float:
    value = metrics.registry.get_sample_value(name)
    return 0.0 if value is None else value


# The short retention leaves room for a loaded machine: the batch that records a tombstone must not see it
# expire before it ends (2 s did, beside other tests on 2 cores).
@pytest.mark.parametrize("retention_hours", [168.0, 10 / 3600])
async def test_a_tombstone_keeps_a_late_change_out_for_its_retention(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path, retention_hours: float
) -> None:
    topic = kafka_tools.unique("retention")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    settings = sink_settings_for_tests(
        topic=topic, lake_uri=(tmp_path / "lake").as_uri(), mirrors="follow", tombstone_retention_hours=retention_hours
    )
    await _run(
        kafka_bootstrap, spark, settings, [_event("INSERT", 10, {"id": 1, "a": 1}), _event("INSERT", 11, {"id": 2})]
    )
    await _run(kafka_bootstrap, spark, settings, [_event("DELETE", 20, {"id": 1})])
    assert _ids(spark, settings) == [2]
    assert _tombstones(spark, settings) == ['["1"]']
    await asyncio.sleep(11)  # past the short retention
    # A change older than the delete: kept out by the tombstone the batch read, expired or not.
    second = await _run(kafka_bootstrap, spark, settings, [_event("UPDATE", 15, {"id": 1, "a": 15})])
    assert _ids(spark, settings) == [2]
    third = await _run(kafka_bootstrap, spark, settings, [_event("INSERT", 16, {"id": 1, "a": 16})])
    expired = retention_hours < 1
    older = "binlake_sink_changes_older_than_retention_total"
    if not expired:
        assert _tombstones(spark, settings) == ['["1"]']
        assert _ids(spark, settings) == [2]  # still kept out
        assert _count(second, "binlake_sink_tombstones_expired_total") == 0
        assert _count(second, older) == _count(third, older) == 0
        return
    # The second batch dropped the expired tombstone after its MERGE; the third's late change came back.
    assert _count(second, "binlake_sink_tombstones_expired_total") == 1
    assert _tombstones(spark, settings) == []
    assert _ids(spark, settings) == [1, 2]
    assert _count(second, older) == _count(third, older) == 1
