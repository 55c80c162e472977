"""A mirror batch's statistics, control events and descriptors from one aggregation (``mirror.batch_facts``),
and the row count a change-feed read is checked against (``mirror.batch_rows``), on a real changelog."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Ddl, Origin, Source
from binlake.shared.event.values import Image
from binlake.spark_sink import delta, job
from binlake.spark_sink.changelog.table import ensure_table, inserted_between
from binlake.spark_sink.events.order import sequence_of
from binlake.spark_sink.mirror import batch_facts, batch_rows
from binlake.spark_sink.mirror.plan import ColumnDesc
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

BASE = [Column("id", "int", "int32"), Column("a", "varchar(8)", "string")]
WIDER = [*BASE, Column("c", "bigint", "int64")]


def _event(
    op: str,
    table: str,
    position: int,
    *,
    after: Image | None = None,
    before: Image | None = None,
    columns: list[Column] | None = None,
    ddl: Ddl | None = None,
) -> ChangeEvent:
    row_event = op in ("INSERT", "UPDATE", "DELETE")
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # the test's ops are valid Op literals
        source=Source("test", "mysql", "f", None, table),
        order_key=f"{position:020d}",
        ts_ms=position * 1000,
        ingest_ts_ms=None,
        primary_key=["id"] if row_event else [],
        columns=Columns(columns if columns is not None else (BASE if row_event else [])),
        before=before,
        after=after,
        changed_columns=None,
        ddl=ddl,
        origin=Origin("vendor", 0, position, 0),
    )


ALTER = Ddl("ALTER TABLE one ADD COLUMN c bigint", "ALTER_TABLE")
FIRST = [
    _event("INSERT", "one", 1, after={"id": 1, "a": "x"}),
    _event("INSERT", "one", 2, after={"id": 2, "a": "y"}),
    _event("UPDATE", "one", 3, before={"id": 1}, after={"id": 1, "a": "z"}),
    _event("INSERT", "two", 4, after={"id": 1, "a": "p"}),
    _event("DDL", "one", 5, ddl=ALTER),
]
SECOND = [
    _event("INSERT", "one", 6, after={"id": 3, "a": "q", "c": 7}, columns=WIDER),
    _event("DELETE", "two", 7, before={"id": 1}),
    _event("TRUNCATE", "two", 8),
    _event("TRUNCATE", "two", 8),  # the same change twice (one source position): it counts twice
    _event("DDL", "two", 9, ddl=Ddl("DROP TABLE two", "DROP_TABLE")),
]


def _until_done(query: StreamingQuery) -> None:
    query.awaitTermination()
    assert query.exception() is None


async def test_one_aggregation_finds_what_the_batch_needs(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = f"facts-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    settings = sink_settings_for_tests(topic=topic, lake_uri=(tmp_path / "lake").as_uri(), mirrors="follow")
    uri = settings.changelog_uri()
    version = ensure_table(spark, uri, list(settings.changelog_partition_by))
    ids = job.owned_app_ids(spark, settings)
    kafka = kafka_settings(kafka_bootstrap)
    for events in (FIRST, SECOND):  # two changelog commits
        await kafka_tools.produce(kafka_bootstrap, topic, [(None, avro.encode(e)) for e in events])
        query = job.start_changelog(spark, settings, kafka, ids.changelog, version=version)
        await asyncio.to_thread(_until_done, query)

    changelog = spark.read.format("delta").load(uri)
    facts = batch_facts.collect(changelog)

    assert facts.stats.rows == len(FIRST) + len(SECOND)
    assert {key: entry.rows for key, entry in facts.stats.by_table_op.items()} == {
        ("f.one", "INSERT"): 3,
        ("f.one", "UPDATE"): 1,
        ("f.one", "DDL"): 1,
        ("f.two", "INSERT"): 1,
        ("f.two", "DELETE"): 1,
        ("f.two", "TRUNCATE"): 2,
        ("f.two", "DDL"): 1,
    }
    assert facts.stats.by_table_op[("f.one", "INSERT")].max_ts_ms == 6000
    assert sum(bucket.count for bucket in facts.stats.event_time) == facts.stats.rows

    assert facts.control["f.one"].added == [ColumnDesc("c", "int64", None, None)]
    assert facts.control["f.one"].truncated_at is None
    two = facts.control["f.two"]
    truncate_at = sequence_of(f"{8:020d}", "vendor", 0, 8, 0)
    drop_at = sequence_of(f"{9:020d}", "vendor", 0, 9, 0)
    assert [seq for seq, _ in two.truncations] == [truncate_at, truncate_at, drop_at]
    assert (two.truncated_at, two.truncated_ts_ms) == (drop_at, 9000)

    # Per table its descriptors in the order of their first events, and its row events.
    one = facts.descriptors["f.one"]
    assert [[c.name for c in d.columns] for d in one] == [["id", "a"], ["id", "a", "c"]]
    assert all(d.primary_key == ("id",) for d in one)
    assert [[c.name for c in d.columns] for d in facts.descriptors["f.two"]] == [["id", "a"]]
    assert (facts.counts["f.one"].rows, facts.counts["f.one"].changes) == (4, 1)
    assert (facts.counts["f.two"].rows, facts.counts["f.two"].changes) == (2, 1)

    # A change-feed read of whole versions is checked against the rows the log says they added.
    latest = delta.current_version(spark, uri)
    assert latest is not None and latest >= 2
    for first in range(1, latest + 1):
        assert batch_rows.records(spark, uri, first, latest) == inserted_between(spark, uri, first, latest).count()
