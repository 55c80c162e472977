"""The lake's one tombstone table (``spark_sink.mirror.tombstones``), on real Kafka + Spark + Delta.

- A key's text is the same before and after a type widening of its columns, so
  a delete recorded before the widening still keeps older events out after it.
- A mirror batch appends the deletes of all its tables in one commit.
- A compaction keeps one row per deleted key (its newest delete) and one file
  per source table, the floors unchanged, and a replayed batch skips it.
- A lake of an earlier release, with a tombstone table per source table
  (``tombstones/<table>/``): its deleted keys still keep older events out, a
  TRUNCATE empties it, and ``binlake lake verify`` reads both layouts.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent
from binlake.spark_sink import delta, job
from binlake.spark_sink.events.order import sequence_of
from binlake.spark_sink.lake import facts as lake_facts
from binlake.spark_sink.lake import verify
from binlake.spark_sink.layout import ORDER_KEY
from binlake.spark_sink.mirror import tombstones
from binlake.spark_sink.mirror.merge_rules import FLOOR
from binlake.spark_sink.mirror.tombstones import KEY, TABLE, TEXT_KEY, key_text
from binlake.spark_sink.settings import SinkSettings
from tests.sink.test_sink_semantics import _event, _sorted
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]


def _text(spark: SparkSession, sql: str, data_type: DataType) -> str:
    row = spark.sql(f"SELECT {sql} AS k").select(key_text(["k"], [data_type])).first()
    assert row is not None
    return str(row[0])


def test_a_keys_text_survives_the_widening_of_its_columns(spark: SparkSession) -> None:
    decimal = _text(spark, "CAST(1.5 AS DECIMAL(10,2))", DecimalType(10, 2))
    assert decimal == _text(spark, "CAST(1.5 AS DECIMAL(12,4))", DecimalType(12, 4)) == '["1.5"]'
    integer = _text(spark, "CAST(5 AS INT)", IntegerType())
    assert integer == _text(spark, "CAST(5 AS BIGINT)", LongType()) == '["5"]'
    assert integer == _text(spark, "CAST(5 AS DECIMAL(20,0))", DecimalType(20, 0))
    assert _text(spark, "CAST(100 AS DECIMAL(5,0))", DecimalType(5, 0)) == '["100"]'  # no point: zeros stay
    assert _text(spark, "CAST(-0.10 AS DECIMAL(4,2))", DecimalType(4, 2)) == '["-0.1"]'
    day = _text(spark, "DATE'2024-02-29'", DateType())
    assert day == _text(spark, "TIMESTAMP_NTZ'2024-02-29 00:00:00'", TimestampNTZType())
    assert _text(spark, "CAST(1.5 AS FLOAT)", FloatType()) == _text(spark, "CAST(1.5 AS DOUBLE)", DoubleType())
    assert _text(spark, "X'00FF'", BinaryType()) == '["00FF"]'
    assert _text(spark, "TIMESTAMP'1970-01-01 00:00:01 UTC'", TimestampType()) == '["1000000"]'
    row = spark.sql("SELECT 7 AS a, 'x' AS b").select(key_text(["a", "b"], [IntegerType(), StringType()])).first()
    assert row is not None and row[0] == '["7","x"]'


def _sequence(ok: int) -> str:
    return sequence_of(f"{ok:020d}.{0:020d}.{0:06d}", "vendor", 0, ok, 0)


async def _round(
    bootstrap: str, topic: str, spark: SparkSession, settings: SinkSettings, events: list[ChangeEvent]
) -> None:
    """Send ``events``, then run the changelog query and the mirror query over them (available-now)."""
    await kafka_tools.produce(bootstrap, topic, [(None, avro.encode(e)) for e in events])
    await asyncio.to_thread(job.run, spark, settings, kafka_settings(bootstrap))


@pytest.mark.asyncio
async def test_one_commit_per_batch_and_an_earlier_releases_tombstones(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = f"tombs-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    settings = sink_settings_for_tests(topic=topic, lake_uri=(tmp_path / "lake").as_uri(), mirrors="follow")
    # An earlier release's lake: t.old's own tombstone table says key 3 was deleted at 50.
    legacy = settings.legacy_tombstones_uri("t.old")
    spark.createDataFrame([(3, _sequence(50))], "id int, _binlake_order_key string").write.format("delta").save(legacy)

    await _round(
        kafka_bootstrap,
        topic,
        spark,
        settings,
        [
            _event("INSERT", "old", 40, after={"id": 3, "a": 3, "b": "x"}),  # older than its delete: stays out
            _event("INSERT", "old", 41, after={"id": 4, "a": 4, "b": "y"}),
            *(
                e
                for table in ("a", "b", "c")
                for e in (
                    _event("INSERT", table, 10, after={"id": 1, "a": 1, "b": "p"}),
                    _event("INSERT", table, 11, after={"id": 2, "a": 2, "b": "q"}),
                    _event("DELETE", table, 12, before={"id": 1, "a": 1, "b": "p"}),
                )
            ),
            # A key of other types (int, string): its deleted keys are converted apart from the others'.
            _event("INSERT", "d", 10, after={"id": 1, "a": 1, "b": "p"}, key=("id", "b")),
            _event("INSERT", "d", 11, after={"id": 2, "a": 2, "b": "q"}, key=("id", "b")),
            _event("DELETE", "d", 12, before={"id": 1, "a": 1, "b": "p"}, key=("id", "b")),
        ],
    )
    old = spark.read.format("delta").load(settings.mirror_uri("t.old"))
    assert _sorted(old, ["id"]) == [(4,)]
    deleted = spark.read.format("delta").load(settings.tombstones_uri())
    assert _sorted(deleted, ["source_table", "key"]) == [
        ("t.a", '["1"]'),
        ("t.b", '["1"]'),
        ("t.c", '["1"]'),
        ("t.d", '["1","p"]'),
    ]
    writes = DeltaTable.forPath(spark, settings.tombstones_uri()).history().where(F.col("operation") == "WRITE")
    assert writes.count() == 1  # the four tables' deletes: one commit
    for table in ("a", "b", "c", "d"):
        assert _sorted(spark.read.format("delta").load(settings.mirror_uri(f"t.{table}")), ["id"]) == [(2,)]

    # A late insert of a deleted key stays out; a TRUNCATE of t.old empties its own tombstone table, and the
    # key inserted after it is in. A key of t.b inserted and deleted again, one of t.c deleted: the batch's
    # compaction then finds more files than source tables (a threshold of 0) and rewrites the tombstones, one
    # row per key.
    compacting = settings.model_copy(update={"tombstone_compact_files": 0})
    await _round(
        kafka_bootstrap,
        topic,
        spark,
        compacting,
        [
            _event("INSERT", "a", 5, after={"id": 1, "a": 9, "b": "late"}),
            _event("TRUNCATE", "old", 60, columns=[], key=()),
            _event("INSERT", "old", 70, after={"id": 3, "a": 30, "b": "z"}),
            _event("INSERT", "b", 20, after={"id": 1, "a": 5, "b": "again"}),
            _event("DELETE", "b", 21, before={"id": 1, "a": 5, "b": "again"}),
            _event("DELETE", "c", 20, before={"id": 2, "a": 2, "b": "q"}),
        ],
    )
    assert _sorted(spark.read.format("delta").load(settings.mirror_uri("t.a")), ["id"]) == [(2,)]
    assert spark.read.format("delta").load(legacy).count() == 0
    assert _sorted(spark.read.format("delta").load(settings.mirror_uri("t.old")), ["id", "a"]) == [(3, 30)]
    assert _sorted(spark.read.format("delta").load(settings.mirror_uri("t.b")), ["id"]) == [(2,)]
    assert _sorted(spark.read.format("delta").load(settings.mirror_uri("t.c")), ["id"]) == []
    held = spark.read.format("delta").load(settings.tombstones_uri()).select(TABLE, KEY, ORDER_KEY).collect()
    assert sorted((table, key, sequence[:20]) for table, key, sequence in held) == [
        ("t.a", '["1"]', f"{12:020d}"),
        ("t.b", '["1"]', f"{21:020d}"),  # its delete at 12 compacted away
        ("t.c", '["1"]', f"{12:020d}"),
        ("t.c", '["2"]', f"{20:020d}"),
        ("t.d", '["1","p"]', f"{12:020d}"),
    ]
    assert delta.file_count(spark, settings.tombstones_uri()) == 4  # one per source table
    history = DeltaTable.forPath(spark, settings.tombstones_uri()).history()
    assert history.where(F.col("operationParameters.mode") == "Overwrite").count() == 1
    # binlake lake verify reads the tombstones of both layouts: the lake matches the topic.
    facts = await asyncio.to_thread(lake_facts.gather, spark, compacting, kafka_settings(kafka_bootstrap))
    assert verify.compare(facts).differences == []
    assert {t.table: t.mirror.tombstones for t in facts.tables if t.mirror is not None} == {
        "t.a": True,
        "t.b": True,
        "t.c": True,
        "t.d": True,
        "t.old": True,  # its own (emptied) tombstone table of the earlier release
    }


def test_compaction_keeps_each_keys_newest_delete(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "deleted_keys").as_uri()
    appends = [
        [("t.a", '["1"]', _sequence(10)), ("t.b", '["1"]', _sequence(11))],
        [("t.a", '["1"]', _sequence(20)), ("t.a", '["2"]', _sequence(21))],  # key 1 deleted again
        [("t.b", '["1"]', _sequence(5))],  # a stale delete, older than the one held
    ]

    def rows(data: list[tuple[str, str, str]]) -> DataFrame:
        return spark.createDataFrame(data, f"{TABLE} string, {KEY} string, {ORDER_KEY} string")

    def floors() -> dict[str, list[tuple[str, str]]]:
        pinned = tombstones.pin(spark, uri)
        out = {}
        for table in ("t.a", "t.b"):
            floor = tombstones.floors(
                spark,
                pinned=pinned,
                table=table,
                legacy_uri=(tmp_path / "none").as_uri(),
                key=["id"],
                types=[IntegerType()],
            )
            assert floor is not None
            out[table] = sorted((r[TEXT_KEY], r[FLOOR]) for r in floor.collect())
        return out

    for batch, data in enumerate(appends):
        tombstones.record(spark, uri, [rows(data)], app_id="app", batch_id=batch)
    files = delta.file_count(spark, uri)
    assert files >= 4  # a file per source table and append
    before = floors()
    assert before == {"t.a": [('["1"]', _sequence(20)), ('["2"]', _sequence(21))], "t.b": [('["1"]', _sequence(11))]}

    compact = functools.partial(tombstones.compact, spark, uri, retention_s=0.0, app_id="app.compact")  # by files
    assert compact(max_files=files, batch_id=2) is None  # not yet
    assert compact(max_files=0, batch_id=2) == 0  # rewritten, nothing expired
    assert delta.file_count(spark, uri) == 2  # one per source table
    held = spark.read.format("delta").load(uri)
    assert _sorted(held, [TABLE, KEY, ORDER_KEY]) == [
        ("t.a", '["1"]', _sequence(20)),
        ("t.a", '["2"]', _sequence(21)),
        ("t.b", '["1"]', _sequence(11)),
    ]
    assert floors() == before
    assert compact(max_files=0, batch_id=3) is None  # nothing to gain

    # The batch replayed after a crash that followed its compaction: its append and its compaction are skipped
    # (their transaction ids are in the table's log, which the rewrite kept).
    version = delta.current_version(spark, uri)
    tombstones.record(spark, uri, [rows(appends[2])], app_id="app", batch_id=2)
    assert delta.current_version(spark, uri) == version
    newer = [("t.a", '["1"]', _sequence(30)), ("t.c", '["9"]', _sequence(30))]
    tombstones.record(spark, uri, [rows(newer)], app_id="app", batch_id=3)  # the next batch: t.a has two files again
    assert delta.file_count(spark, uri) == 4
    assert compact(max_files=0, batch_id=2) is None  # replayed: committed already
    assert delta.file_count(spark, uri) == 4
    assert compact(max_files=0, batch_id=3) == 0
    assert delta.file_count(spark, uri) == 3
    assert floors() == {**before, "t.a": [('["1"]', _sequence(30)), ('["2"]', _sequence(21))]}
