"""The changelog's layout version 2 (envelope columns + the event's Avro bytes), on real Kafka + Spark + Delta.

Lossless: every value kind survives byte for byte (the body decodes to the event
that was sent), an absent column stays absent and a NULL stays NULL in the
decoded view and in the mirror. A lake whose changelog an earlier release made
(layout 1, every field decoded) keeps its layout, and its mirrors keep working.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import BigInt, Image, SqlTime, Unparsed
from binlake.spark_sink import job
from binlake.spark_sink.events.rows import changelog_rows
from binlake.spark_sink.events.source import KAFKA_SCHEMA, decode
from binlake.spark_sink.lake import sql
from binlake.spark_sink.lake.native import duckdb_extensions
from binlake.spark_sink.layout import BODY
from binlake.spark_sink.settings import MirrorMode
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

COLUMNS = [
    Column("id", "bigint unsigned", "uint64"),
    Column("amount", "decimal(38,10)", "decimal", 38, 10),
    Column("at", "datetime(6)", "datetime"),
    Column("ts", "timestamp(6)", "timestamp"),
    Column("blob", "blob", "bytes"),
    Column("doc", "json", "json"),
    Column("alarm", "time(6)", "time"),
    Column("note", "varchar(20)", "string"),
    Column("day", "date", "date"),
]
MAX_U64 = BigInt(2**64 - 1)
FULL: Image = {
    "id": MAX_U64,
    "amount": Decimal("1234567890123456789012345678.0123456789"),
    "at": dt.datetime(2024, 2, 29, 23, 59, 59, 999999),
    "ts": dt.datetime(2024, 2, 29, 15, 59, 59, 123456, tzinfo=dt.UTC),
    "blob": bytes(range(256)),
    "doc": '{"a": [1, 2.5, "x"]}',
    "alarm": SqlTime(86399999999),
    "note": "雪 ☃ \u0000 end",
    "day": dt.date(1, 1, 1),
}


def _event(op: str, offset: int, *, before: Image | None = None, after: Image | None = None) -> ChangeEvent:
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # the test's ops are valid Op literals
        source=Source("test", "mysql", "v2", None, "kinds"),
        order_key=f"{0:020d}.{offset:020d}.{0:06d}",
        ts_ms=1_700_000_000_000 + offset,
        ingest_ts_ms=None,
        primary_key=["id"],
        columns=Columns(COLUMNS),
        before=before,
        after=after,
        changed_columns=["note"] if op == "UPDATE" else None,
        ddl=None,
        origin=Origin("vendor", 0, offset, 0),
    )


EVENTS = [
    _event("INSERT", 1, after=FULL),
    _event("INSERT", 2, after={**FULL, "id": BigInt(7), "day": Unparsed("0000-00-00")}),
    # note set to NULL; every other column absent (unknown): the mirror keeps them.
    _event("UPDATE", 3, before={"id": MAX_U64}, after={"id": MAX_U64, "note": None}),
]


def _mirror(spark: SparkSession, uri: str) -> dict[Any, dict[str, Any]]:
    rows = spark.read.format("delta").load(uri).collect()
    return {row["id"]: row.asDict() for row in rows}


@pytest.mark.parametrize("mirrors", ["follow", "inline"])
async def test_layout_2_is_lossless(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path, mirrors: MirrorMode
) -> None:
    topic = f"v2-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, avro.encode(e)) for e in EVENTS])
    lake = (tmp_path / "lake").as_uri()
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake, mirrors=mirrors)
    await asyncio.to_thread(job.run, spark, settings, kafka_settings(kafka_bootstrap))

    stored = spark.read.format("delta").load(settings.changelog_uri())
    assert not {"before", "after", "columns", "changed_columns"} & set(stored.columns)
    assert {"op", "order_key", "origin", "source_table", BODY} <= set(stored.columns)
    bodies = [bytes(r[BODY]) for r in stored.orderBy("_kafka_offset").collect()]
    assert [avro.decode(b) for b in bodies] == EVENTS  # byte for byte: every value kind exact

    # The envelope without Spark: DuckDB's delta extension (what `binlake lake show` uses) reads it.
    connection = duckdb.connect(
        config={"extension_directory": duckdb_extensions(), "autoinstall_known_extensions": False}
    )
    connection.execute("LOAD delta")
    path = str(tmp_path / "lake" / "changelog").replace("'", "''")
    found = connection.execute(
        f"SELECT op, order_key, source_table, ts_ms, origin.offset, {BODY} "
        f"FROM delta_scan('{path}') ORDER BY _kafka_offset"
    ).fetchall()
    assert [row[:4] for row in found] == [(e.op, e.order_key, "v2.kinds", e.ts_ms) for e in EVENTS]
    assert [row[4] for row in found] == [e.origin.offset for e in EVENTS]
    assert [avro.decode(bytes(row[5])) for row in found] == EVENTS

    view = sql.changelog_events(spark, lake).where("op = 'UPDATE'")
    update = view.select(
        F.map_contains_key("after", "amount").alias("amount_known"),
        F.map_contains_key("after", "note").alias("note_known"),
        F.col("after")["note"]["member_string"].alias("note"),
        F.col("changed_columns").alias("changed"),
    ).first()
    assert update is not None
    assert (update["amount_known"], update["note_known"], update["note"], update["changed"]) == (
        False,
        True,
        None,
        ["note"],
    )

    mirror = _mirror(spark, settings.mirror_uri("v2.kinds"))
    top = mirror[Decimal(MAX_U64)]
    assert top["note"] is None  # NULL written
    assert top["amount"] == FULL["amount"]  # absent: untouched
    assert bytes(top["blob"]) == FULL["blob"]
    assert top["at"] == FULL["at"]
    assert mirror[Decimal(7)]["day"] is None  # an Unparsed zero date: NULL here, its text in the changelog


async def test_a_layout_1_changelog_keeps_its_layout(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    """A changelog an earlier release made (every field decoded, no version property) is continued as it is."""
    topic = f"v1-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, avro.encode(e)) for e in EVENTS])
    lake = (tmp_path / "lake").as_uri()
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake)
    old = changelog_rows(decode(spark.createDataFrame([], KAFKA_SCHEMA)), 1)
    old.write.format("delta").partitionBy(*settings.changelog_partition_by).save(settings.changelog_uri())

    await asyncio.to_thread(job.run, spark, settings, kafka_settings(kafka_bootstrap))
    stored = spark.read.format("delta").load(settings.changelog_uri())
    assert {"before", "after", "columns"} <= set(stored.columns) and BODY not in stored.columns
    assert stored.count() == len(EVENTS)
    assert sql.changelog_events(spark, lake).count() == len(EVENTS)
    mirror = _mirror(spark, settings.mirror_uri("v2.kinds"))
    assert sorted(mirror) == [Decimal(7), Decimal(MAX_U64)]
    assert mirror[Decimal(MAX_U64)]["note"] is None and mirror[Decimal(MAX_U64)]["amount"] == FULL["amount"]
