"""Mirror, tombstone, history and schema rules of the Spark sink, event by event, on real Kafka + Spark + Delta.

Canonical events are written straight to a unified topic with chosen
``order_key``s, in three rounds; after each round the sink runs (available-now,
same checkpoint) and the Delta tables are checked against what the rules in
docs/spark-sink.md say. Each round also reads every table's current state
(``current_state``, merge on read) between the changelog query and the mirror
query, and each mirror must then equal what was read.

1. inserts, a partial UPDATE (an absent column stays), deletes, a key-changing
   UPDATE; a key-less table (append-only); an int column;
2. late events: an UPDATE older than the mirror's row but newer than the column
   it sets (applied to that column, as in the history), an INSERT older than the key's delete (no
   resurrection); a redelivered event; ``ALTER TABLE ... ADD COLUMN`` (the
   mirror gets the column before any row carries it); the int column widened
   to bigint; in one batch, a late and a new UPDATE of one key, a delete and
   re-insert, and a DELETE older than the mirror's row;
3. TRUNCATE (rows and tombstones gone, history versions closed, older events
   ignored by the mirror but versions in the history; a table's TRUNCATE with no
   row event after it), a string into the integer column (fallback column);
4. an event older than the TRUNCATE applied in round 3: the history places it.
"""

from __future__ import annotations

import asyncio
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.types import DecimalType, LongType

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Ddl, Origin, Source
from binlake.shared.event.values import Image
from binlake.spark_sink import job
from binlake.spark_sink.changelog.table import ensure_table
from binlake.spark_sink.delta import quote
from binlake.spark_sink.events.order import sequence_of
from binlake.spark_sink.layout import PROP_TRUNCATED
from binlake.spark_sink.mirror import current_state, mirror_state
from binlake.spark_sink.settings import SinkSettings
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

KEYED = [Column("id", "int", "int32"), Column("a", "int", "int32"), Column("b", "varchar(8)", "string")]
WITH_C = [*KEYED, Column("c", "decimal(10,2)", "decimal", 10, 2)]
LOG = [Column("msg", "text", "string")]
# Column names a SQL text must quote: the mirror projection is built as SQL (typemap.convert).
ODD = [Column("id", "int", "int32"), Column("it's", "int", "int32"), Column("back\\slash", "varchar(8)", "string")]
ODD_TICK = Column("tick`col", "int", "int32")


def _types(q_type: str, logical: str) -> list[Column]:
    return [Column("id", "int", "int32"), Column("q", q_type, logical)]


def _event(
    op: str,
    table: str,
    ok: int,
    *,
    after: Image | None = None,
    before: Image | None = None,
    columns: list[Column] | None = None,
    key: tuple[str, ...] = ("id",),
    ddl: Ddl | None = None,
) -> ChangeEvent:
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # the test's ops are valid Op literals
        source=Source("test", "mysql", "t", None, table),
        order_key=f"{ok:020d}.{0:020d}.{0:06d}",
        ts_ms=ok * 100,
        ingest_ts_ms=None,
        primary_key=list(key),
        columns=Columns(columns if columns is not None else KEYED),
        before=before,
        after=after,
        changed_columns=None,
        ddl=ddl,
        origin=Origin("vendor", 0, ok, 0),
    )


ROUND_1 = [
    _event("INSERT", "keyed", 10, after={"id": 1, "a": 1, "b": "x"}),
    _event("INSERT", "keyed", 20, after={"id": 2, "a": 2, "b": "p"}),
    _event("UPDATE", "keyed", 30, before={"id": 1, "b": "x"}, after={"id": 1, "b": "y"}),
    _event("DELETE", "keyed", 40, before={"id": 2, "a": 2, "b": "p"}),
    _event("INSERT", "keyed", 50, after={"id": 5, "a": 5, "b": "k"}),
    _event("UPDATE", "keyed", 60, before={"id": 5, "a": 5, "b": "k"}, after={"id": 6, "a": 6, "b": "k"}),
    _event("INSERT", "log", 11, after={"msg": "one"}, columns=LOG, key=()),
    _event("INSERT", "log", 12, after={"msg": "two"}, columns=LOG, key=()),
    _event("INSERT", "types", 13, after={"id": 1, "q": 5}, columns=_types("int", "int32")),
    _event("INSERT", "mixed", 14, after={"id": 1, "a": 1, "b": "x"}),
    _event("UPDATE", "mixed", 16, before={"id": 1}, after={"id": 1, "a": 2}),
    _event("INSERT", "mixed", 17, after={"id": 2, "a": 2, "b": "p"}),
    _event("INSERT", "mixed", 18, after={"id": 3, "a": 3, "b": "s"}),
    _event("UPDATE", "mixed", 19, before={"id": 3}, after={"id": 3, "a": 4}),
    _event("INSERT", "odd", 21, after={"id": 1, "it's": 1, "back\\slash": "a"}, columns=ODD),
    _event("INSERT", "odd", 22, after={"id": 2, "it's": 2, "back\\slash": "b"}, columns=ODD),
    _event("UPDATE", "odd", 23, before={"id": 1}, after={"id": 1, "back\\slash": "c"}, columns=ODD),
    # The key moves: the old key is read from the before image by name.
    _event("UPDATE", "odd", 24, before={"id": 2}, after={"id": 3, "tick`col": 7}, columns=[*ODD, ODD_TICK]),
    _event("INSERT", "late", 26, after={"id": 1, "a": 1, "b": "x"}),
    _event("DELETE", "late", 27, before={"id": 1, "a": 1, "b": "x"}),
]
MIXED_2 = [
    # One batch, late and new events of the same key: the late one's column stays as the mirror has it.
    _event("UPDATE", "mixed", 15, before={"id": 1}, after={"id": 1, "a": 99}),
    _event("UPDATE", "mixed", 72, before={"id": 1}, after={"id": 1, "b": "new"}),
    # Deleted and inserted again in the batch: the columns the new insert leaves unknown restart from NULL.
    _event("UPDATE", "mixed", 73, before={"id": 2}, after={"id": 2, "a": 3}),
    _event("DELETE", "mixed", 74, before={"id": 2}),
    _event("INSERT", "mixed", 75, after={"id": 2, "b": "re"}),
    # A DELETE older than the mirror's row changes nothing.
    _event("DELETE", "mixed", 16, before={"id": 3}),
]
ROUND_2 = [
    _event("UPDATE", "keyed", 25, before={"id": 1, "a": 1}, after={"id": 1, "a": 9}),  # late
    _event("INSERT", "keyed", 35, after={"id": 2, "a": 22, "b": "late"}),  # older than the delete at 40
    ROUND_1[2],  # redelivered
    _event(
        "DDL", "keyed", 70, columns=[], key=(), ddl=Ddl("ALTER TABLE keyed ADD COLUMN c decimal(10,2)", "ALTER_TABLE")
    ),
    _event("INSERT", "types", 71, after={"id": 2, "q": 2**40}, columns=_types("bigint", "int64")),
    *MIXED_2,
]
ROUND_2B = [
    _event("INSERT", "keyed", 80, after={"id": 7, "a": 7, "b": "n", "c": Decimal("1.50")}, columns=WITH_C),
    # The mirror holds none of these keys (appended, not MERGEd): the tombstone still keeps out the insert
    # older than its delete, and a partial image leaves its absent column NULL.
    _event("INSERT", "late", 25, after={"id": 1, "a": 5, "b": "resurrected"}),
    _event("INSERT", "late", 81, after={"id": 2, "b": "new"}),
]
ROUND_3 = [
    _event("TRUNCATE", "keyed", 90, columns=[], key=()),
    _event("INSERT", "keyed", 100, after={"id": 8, "a": 8, "b": "z", "c": Decimal("2.25")}, columns=WITH_C),
    # Older than the TRUNCATE, in its batch: ignored by the mirror, versions in the history closed by it.
    _event("INSERT", "keyed", 85, after={"id": 9, "a": 9, "b": "old"}),
    _event("UPDATE", "keyed", 86, before={"id": 7}, after={"id": 7, "a": 70}),  # its stored version is closed too
    _event("INSERT", "keyed", 87, after={"id": 10, "a": 10, "b": "t"}),
    _event("DELETE", "keyed", 88, before={"id": 10}),  # deleted before the TRUNCATE: nothing to close
    _event("TRUNCATE", "log", 95, columns=[], key=()),
    _event("INSERT", "log", 94, after={"msg": "before"}, columns=LOG, key=()),  # older: not appended
    _event("INSERT", "log", 96, after={"msg": "three"}, columns=LOG, key=()),
    _event("INSERT", "types", 97, after={"id": 3, "q": "abc"}, columns=_types("varchar(3)", "string")),
    _event("TRUNCATE", "late", 98, columns=[], key=()),  # a TRUNCATE and no row event: the mirror emptied
]
# Older than the TRUNCATE applied in an earlier batch: a history version, closed at the TRUNCATE's time.
ROUND_4 = [_event("UPDATE", "keyed", 89, before={"id": 9}, after={"id": 9, "b": "older"})]


async def _round(
    bootstrap: str,
    topic: str,
    spark: SparkSession,
    settings: SinkSettings,
    events: list[ChangeEvent],
    *,
    whole: SinkSettings | None = None,
) -> None:
    """Send ``events`` and run the sink over them: the changelog query first, then every table's current
    state is read (``current_state``: merge on read, before the mirror query
    runs), then the mirror query: each mirror must equal what was read. ``whole``: the same lake with the
    mirror query's progress unknown, read too (the whole changelog folded over the mirror: the same rows)."""
    await kafka_tools.produce(bootstrap, topic, [(None, avro.encode(event)) for event in events])
    kafka = kafka_settings(bootstrap)
    version = ensure_table(spark, settings.changelog_uri(), list(settings.changelog_partition_by))
    ids = job.owned_app_ids(spark, settings)
    await asyncio.to_thread(_until_done, job.start_changelog(spark, settings, kafka, ids.changelog, version=version))
    names = [f"t.{table}" for table in TABLES]
    read: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = {}
    for name, frame in current_state.current_tables(spark, settings, names).items():
        # The column sequences' own columns can hold one state in two ways (a row untouched since a column was
        # added, or rewritten with it); test_sink_batching compares the sequences they stand for.
        columns = [c for c in frame.columns if c not in mirror_state.STATE_COLUMNS]
        read[name] = (columns, _sorted(frame, columns))
    if whole is not None:
        for name, frame in current_state.current_tables(spark, whole, names).items():
            assert _sorted(frame, read[name][0]) == read[name][1], name
    await asyncio.to_thread(_until_done, job.start_mirrors(spark, settings, ids.mirrors))
    for table, (columns, rows) in read.items():
        mirror = spark.read.format("delta").load(settings.mirror_uri(table))
        assert sorted(c for c in mirror.columns if c not in mirror_state.STATE_COLUMNS) == sorted(columns), table
        assert _sorted(mirror, columns) == rows, table


TABLES = ("keyed", "log", "types", "mixed", "odd", "late")


def _until_done(query: StreamingQuery) -> None:
    query.awaitTermination()
    assert query.exception() is None, query.exception()


def _sorted(frame: DataFrame, columns: list[str]) -> list[tuple[Any, ...]]:
    return sorted((tuple(row) for row in frame.select(*[quote(c) for c in columns]).collect()), key=repr)


def _rows(spark: SparkSession, uri: str, *columns: str, order: str = "_binlake_order_key") -> list[tuple[Any, ...]]:
    frame = spark.read.format("delta").load(uri).orderBy(order)
    return [tuple(row) for row in frame.select(*columns).collect()]


def _tombstones(spark: SparkSession, settings: SinkSettings, table: str) -> list[str]:
    """The keys the lake's tombstone table holds for ``table``."""
    frame = spark.read.format("delta").load(settings.tombstones_uri()).where(F.col("source_table") == table)
    return sorted(row["key"] for row in frame.collect())


def _history(spark: SparkSession, uri: str, *extra: str) -> list[tuple[Any, ...]]:
    frame = spark.read.format("delta").load(uri).orderBy("id", "_binlake_order_key")
    stamp = [F.unix_millis("valid_from").alias("vf"), F.unix_millis("valid_to").alias("vt")]
    return [tuple(r) for r in frame.select("id", "a", "b", *extra, "_binlake_op", "is_current", *stamp).collect()]


async def test_mirror_history_and_schema_rules(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    topic = f"sem-{tmp_path.name}"
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    lake = (tmp_path / "lake").as_uri()
    # Both ways of folding: a table with fewer than 4 row events in a batch shares the batch's one fold
    # (mirror.fold: "late", "types"), one with more folds on its own ("mixed", "odd"; "keyed" has a history).
    # The rules are the same code with mirrors=inline (test_sink_changelog_layout runs that mode).
    # "t.log" is key-less: the history setting names it, yet it has no history and its TRUNCATE still drops the
    # older rows of its batch.
    settings = sink_settings_for_tests(
        topic=topic, lake_uri=lake, history_tables=["t.keyed", "t.log"], mirrors="follow"
    )
    keyed, log, types, mixed = (settings.mirror_uri(f"t.{name}") for name in ("keyed", "log", "types", "mixed"))
    history = settings.history_uri("t.keyed")

    await _round(kafka_bootstrap, topic, spark, settings, ROUND_1)
    assert _rows(spark, keyed, "id", "a", "b") == [(1, 1, "y"), (6, 6, "k")]  # a kept: absent from the UPDATE
    assert _tombstones(spark, settings, "t.keyed") == ['["2"]', '["5"]']  # the lake's one table, keys as text
    assert _rows(spark, log, "msg", "_binlake_op") == [("one", "INSERT"), ("two", "INSERT")]
    odd = settings.mirror_uri("t.odd")
    assert _rows(spark, odd, "id", "it's", "back\\slash", "`tick``col`", order="id") == [
        (1, 1, "c", None),
        (3, None, None, 7),
    ]

    await _round(kafka_bootstrap, topic, spark, settings, ROUND_2)
    mirror = spark.read.format("delta").load(keyed)
    assert mirror.schema["c"].dataType == DecimalType(10, 2)  # from the DDL, before any row carries c
    # The late UPDATE of a (25) is newer than the a the row holds (10; the UPDATE at 30 knew only b): applied,
    # as the history's current version has it. The INSERT older than the key's delete is ignored.
    assert _rows(spark, keyed, "id", "a", "b", "c") == [(1, 9, "y", None), (6, 6, "k", None)]
    assert spark.read.format("delta").load(types).schema["q"].dataType == LongType()  # widened
    assert _rows(spark, mixed, "id", "a", "b", order="id") == [(1, 2, "new"), (2, None, "re"), (3, 4, "s")]
    await _round(kafka_bootstrap, topic, spark, settings, ROUND_2B)
    late = settings.mirror_uri("t.late")
    assert _rows(spark, late, "id", "a", "b") == [(2, None, "new")]
    operations = [r["operation"] for r in spark.sql(f"DESCRIBE HISTORY delta.`{late}`").orderBy("version").collect()]
    assert operations[-1] == "WRITE", operations  # round 2B's keys are not in the mirror: appended, not MERGEd
    assert _rows(spark, keyed, "id", "a", "b", "c") == [
        (1, 9, "y", None),
        (6, 6, "k", None),
        (7, 7, "n", Decimal("1.50")),
    ]

    # The last round also reads the current state as if the mirror query's progress were unknown.
    whole = settings.model_copy(update={"mirror_checkpoint_uri": (tmp_path / "no-checkpoint").as_uri()})
    await _round(kafka_bootstrap, topic, spark, settings, ROUND_3, whole=whole)
    assert _rows(spark, keyed, "id", "a", "b", "c") == [(8, 8, "z", Decimal("2.25"))]
    assert _tombstones(spark, settings, "t.keyed") == []
    props = spark.sql(f"SHOW TBLPROPERTIES delta.`{keyed}`").collect()
    assert {r["key"]: r["value"] for r in props}[PROP_TRUNCATED] == sequence_of(
        ROUND_3[0].order_key, "vendor", 0, 90, 0
    )
    assert _rows(spark, log, "msg") == [("three",)]
    assert _rows(spark, late, "id") == []
    assert _rows(spark, types, "id", "q", "q__string", order="id") == [(1, 5, None), (2, 2**40, None), (3, None, "abc")]

    await _round(kafka_bootstrap, topic, spark, settings, ROUND_4)
    assert _rows(spark, keyed, "id", "a", "b", "c") == [(8, 8, "z", Decimal("2.25"))]
    assert _history(spark, history) == [
        (1, 1, "x", "INSERT", False, 1000, 2500),
        (1, 9, "x", "UPDATE", False, 2500, 3000),  # the late UPDATE, in its place
        (1, 9, "y", "UPDATE", False, 3000, 9000),
        (1, 9, "y", "TRUNCATE", False, 9000, 9000),
        (2, 2, "p", "INSERT", False, 2000, 3500),
        (2, 22, "late", "INSERT", False, 3500, 4000),
        (2, 2, "p", "DELETE", False, 4000, 4000),
        (5, 5, "k", "INSERT", False, 5000, 6000),
        (5, 5, "k", "DELETE", False, 6000, 6000),  # the key moved to 6
        (6, 6, "k", "UPDATE", False, 6000, 9000),
        (6, 6, "k", "TRUNCATE", False, 9000, 9000),
        (7, 7, "n", "INSERT", False, 8000, 8600),
        (7, 70, "n", "UPDATE", False, 8600, 9000),
        (7, 70, "n", "TRUNCATE", False, 9000, 9000),
        (8, 8, "z", "INSERT", True, 10000, None),
        (9, 9, "old", "INSERT", False, 8500, 8900),
        (9, 9, "older", "UPDATE", False, 8900, 9000),
        (9, 9, "older", "TRUNCATE", False, 9000, 9000),
        (10, 10, "t", "INSERT", False, 8700, 8800),
        (10, 10, "t", "DELETE", False, 8800, 8800),
    ]
    changelog = spark.read.format("delta").load(settings.changelog_uri())
    assert changelog.count() == len(ROUND_1) + len(ROUND_2) + len(ROUND_2B) + len(ROUND_3) + len(ROUND_4)
