"""The Spark sink end to end: generated traffic -> vendor topic -> normalizer -> unified topic -> Delta.

Real broker, real Spark, real Delta. Every mirror table must equal the
generator's ground truth (typed values compared through the JSON view), the
changelog must hold each event once, garbage must land in the quarantine, and
a replay of the same topic range under a new checkpoint must change nothing.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DecimalType, TimestampType

from binlake.shared.cli import generate
from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.values import SqlTime, Value, integer
from binlake.shared.generate.truth import view
from binlake.shared.generate.workload import Workload
from binlake.spark_sink import delta, job
from binlake.spark_sink.changelog.batch import BatchReport
from binlake.spark_sink.checkpoint.app_ids import LakeOwnershipError
from binlake.spark_sink.lake import facts as lake_facts
from binlake.spark_sink.lake import verify
from binlake.spark_sink.layout import HIDDEN
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.pipeline import Topics, normalizer_settings, run_normalizer_until_caught_up, send_workload
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

EVENTS = 240
SEED = 11
TIME_COLUMNS = frozenset({"alarm"})  # logical type time: long microseconds in the mirror
GARBAGE = [
    b"\xc3\x01" + b"\x00" * 8 + b"\x02\x04",  # unknown fingerprint
    b'{"not": "avro"}',  # no single-object marker
    b"\xc3\x01\x8a",  # shorter than the header
    avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff",  # corrupt body
]


async def _unified_topic(bootstrap: str, format_id: str, tmp_path: Path) -> tuple[str, int, dict[str, Any]]:
    """Run the generator and the normalizer; return the unified topic, its record count and the truth tables."""
    topics = Topics.fresh(format_id)
    await kafka_tools.create_topics(bootstrap, {topics.vendor: 3, topics.events: 3, topics.dlq: 1})
    await send_workload(bootstrap, format_id, topics, events=EVENTS, seed=SEED, zone_name="UTC")
    await run_normalizer_until_caught_up(bootstrap, normalizer_settings(format_id, topics, tmp_path, "UTC"), 3)
    assert await kafka_tools.read_all(bootstrap, topics.dlq) == []
    records = await kafka_tools.read_all(bootstrap, topics.events)
    truth = Workload(seed=SEED, tables=3)
    for _ in truth.run(EVENTS):
        pass
    tables: dict[str, Any] = truth.truth()["tables"]
    return topics.events, len(records), tables


def _canonical(value: Any, name: str, is_instant: bool) -> Value:
    """A mirror cell as the canonical Python value the generator used."""
    if value is None:
        return None
    if is_instant:
        return dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(microseconds=value)
    if name in TIME_COLUMNS:
        return SqlTime(value)
    if isinstance(value, Decimal) and value.as_tuple().exponent == 0:
        return integer(int(value))
    if isinstance(value, bytearray):
        return bytes(value)
    assert not isinstance(value, dt.datetime) or value.tzinfo is None
    out: Value = value
    return out


def mirror_view(spark: SparkSession, uri: str) -> dict[str, dict[str, Any]]:
    """The mirror table in the truth's JSON view: {str(id): {column: rendered value}}."""
    frame = spark.read.format("delta").load(uri)
    instants = {f.name for f in frame.schema.fields if isinstance(f.dataType, TimestampType)}
    visible = [f.name for f in frame.schema.fields if f.name not in HIDDEN]
    rows = frame.select(*[F.unix_micros(n).alias(n) if n in instants else F.col(n) for n in visible]).collect()
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        image = {n: _canonical(row[n], n, n in instants) for n in visible}
        rendered = view(image)
        assert rendered is not None
        out[str(image["id"])] = rendered
    return out


def _run_sink(spark: SparkSession, settings: SinkSettings, bootstrap: str) -> list[BatchReport]:
    reports: list[BatchReport] = []
    job.run(spark, settings, kafka_settings(bootstrap), on_batch=reports.append)
    return reports


def _versions(spark: SparkSession, uris: list[str]) -> dict[str, int | None]:
    return {uri: delta.current_version(spark, uri) for uri in uris}


def _assert_mirrors_equal_truth(spark: SparkSession, settings: SinkSettings, truth: dict[str, Any]) -> int:
    rows = 0
    for table, expected in truth.items():
        got = mirror_view(spark, settings.mirror_uri(table))
        assert sorted(got) == sorted(expected), table
        for key, row in expected.items():
            assert got[key] == row, (table, key)
        rows += len(got)
    return rows


async def test_canal_json_to_delta_exactly_once(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    topic, records, truth = await _unified_topic(kafka_bootstrap, "canal-json", tmp_path)
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, message) for message in GARBAGE])
    lake = (tmp_path / "lake").as_uri()
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake, checkpoint_uri=f"{lake}/_cp/first")
    reports = await asyncio.to_thread(_run_sink, spark, settings, kafka_bootstrap)

    assert sum(r.changelog_rows for r in reports) == records
    assert sum(r.quarantined for r in reports) == len(GARBAGE)
    assert _assert_mirrors_equal_truth(spark, settings, truth) == sum(len(rows) for rows in truth.values())
    changelog = spark.read.format("delta").load(settings.changelog_uri())
    assert changelog.count() == records
    assert changelog.select("_kafka_partition", "_kafka_offset").distinct().count() == records
    assert changelog.where(F.col("source_table").startswith("shop.t")).count() == records
    quarantine = {row["reason"] for row in spark.read.format("delta").load(settings.quarantine_uri()).collect()}
    assert len(quarantine) == len(GARBAGE)
    assert any(reason.startswith("unknown schema fingerprint") for reason in quarantine)

    # Replay the whole topic under a new checkpoint (so a new txnAppId): refused unless the new checkpoint
    # adopts the lake; then nothing changes, not even a commit.
    uris = [settings.changelog_uri(), settings.quarantine_uri()] + [settings.mirror_uri(t) for t in truth]
    before = _versions(spark, uris)
    replay = settings.model_copy(update={"checkpoint_uri": f"{lake}/_cp/replay"})
    with pytest.raises(LakeOwnershipError, match="BINLAKE_SINK_ADOPT_LAKE"):
        await asyncio.to_thread(_run_sink, spark, replay, kafka_bootstrap)
    replay = replay.model_copy(update={"adopt_lake": True})
    reports = await asyncio.to_thread(_run_sink, spark, replay, kafka_bootstrap)
    assert [(r.changelog_rows, r.quarantined, r.tables) for r in reports] == [(0, 0, [])] * len(reports)
    assert _versions(spark, uris) == before
    _assert_mirrors_equal_truth(spark, settings, truth)


async def test_debezium_json_small_batches(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    """Debezium JSON values name no key: the key comes from settings; several micro-batches MERGE in turn,
    into mirrors with configured names and partition columns (and a history table partitioned alike)."""
    topic, records, truth = await _unified_topic(kafka_bootstrap, "debezium-json", tmp_path)
    lake = tmp_path / "lake"
    settings = sink_settings_for_tests(
        topic=topic,
        lake_uri=lake.as_uri(),
        primary_keys={"shop.*": ["id"]},
        max_offsets_per_trigger=100,
        table_names={"shop.t01": "first_one", "shop.*": "copy_of_{table}"},
        partition_by={"shop.t0[01]": ["active"]},
        history_tables=["shop.t00"],
    )
    reports = await asyncio.to_thread(_run_sink, spark, settings, kafka_bootstrap)
    assert len(reports) >= 3
    assert sum(r.changelog_rows for r in reports) == records
    assert sorted(p.name for p in (lake / "mirror").iterdir()) == ["copy_of_t00", "copy_of_t02", "first_one"]
    assert sorted(p.name for p in (lake / "history").iterdir()) == ["copy_of_t00"]
    _assert_mirrors_equal_truth(spark, settings, truth)
    partitioned = {
        name: DeltaTable.forPath(spark, uri).detail().first()["partitionColumns"]  # type: ignore[index]
        for name, uri in {
            "t00": settings.mirror_uri("shop.t00"),
            "t01": settings.mirror_uri("shop.t01"),
            "t02": settings.mirror_uri("shop.t02"),
            "history t00": settings.history_uri("shop.t00"),
        }.items()
    }
    assert partitioned == {"t00": ["active"], "t01": ["active"], "t02": [], "history t00": ["active"]}
    # Each mirror was created by its first write, one commit, with its binlake properties.
    for source in ("shop.t00", "shop.t01", "shop.t02"):
        uri = settings.mirror_uri(source)
        first = DeltaTable.forPath(spark, uri).history().where("version = 0").first()
        assert first is not None and first["operation"] == "CREATE TABLE AS SELECT", source
        properties = DeltaTable.forPath(spark, uri).detail().first()["properties"]  # type: ignore[index]
        assert (properties["binlake.source_table"], properties["binlake.primary_key"]) == (source, '["id"]')
    table = spark.read.format("delta").load(settings.mirror_uri("shop.t00"))
    assert isinstance(table.schema["id"].dataType, DecimalType)
    assert spark.read.format("delta").load(settings.changelog_uri()).count() == records


async def test_tied_canal_traffic_end_to_end(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    """Canal traffic whose naive keys tie and invert (``--ties``: a batch's flat messages share one id, a row
    changed again in the same second and in a later message of the batch, event times that go back):
    generator -> vendor topic -> normalizer -> unified topic -> sink; the mirrors equal the source's final
    state and ``binlake lake verify`` finds nothing."""
    topics = Topics.fresh("canal-ties")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 3, topics.events: 3, topics.dlq: 1})
    workload = Workload(seed=SEED, tables=3, ties=True)
    await kafka_tools.produce(kafka_bootstrap, topics.vendor, generate.messages("canal-json", workload, 600, "UTC"))
    await run_normalizer_until_caught_up(kafka_bootstrap, normalizer_settings("canal-json", topics, tmp_path, "UTC"), 3)
    assert await kafka_tools.read_all(kafka_bootstrap, topics.dlq) == []
    lake = (tmp_path / "lake").as_uri()
    settings = sink_settings_for_tests(
        topic=topics.events, lake_uri=lake, max_offsets_per_trigger=300, mirror_max_files_per_trigger=4
    )
    await asyncio.to_thread(_run_sink, spark, settings, kafka_bootstrap)
    truth: dict[str, Any] = workload.truth()["tables"]
    assert _assert_mirrors_equal_truth(spark, settings, truth) == sum(len(rows) for rows in truth.values())
    facts = await asyncio.to_thread(lake_facts.gather, spark, settings, kafka_settings(kafka_bootstrap))
    assert verify.compare(facts).differences == []
