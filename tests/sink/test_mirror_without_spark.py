"""The mirror written without Spark (``delta_rs_mirror``) is the mirror Spark writes, record for record.

One changelog (written by the changelog writer's store, no broker needed) is applied round by round to
two lakes' mirrors: by the Spark mirror query's batch code (``mirror.batch.process``) and by the mirror
writer without Spark (``follower.read_range`` + ``DeltaRsMirrors``). The rounds are the rule-by-rule
events of ``test_sink_semantics`` (partial images, late events, key moves, a key-less table, deletes and
re-inserts in one batch, ADD COLUMN, TRUNCATE, a type that needs a fallback column, names SQL must quote)
1,000 events of the benchmark's workload (every row op, 8 tables), every value kind into a column of every type, and
deleted keys of every key type (the tombstones' key text). After every round each mirror
must hold the same columns, rows and binlake properties in both lakes, and the newest tombstone of every
deleted key must be the same (as delta-rs reads them); a batch applied twice (a replay) leaves the same tables.
At the end Spark reads every table of both lakes: the same rows.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import BigInt, SqlTime, Unparsed, Value
from binlake.spark_sink.changelog.arrow_rows import KafkaRecord, changelog_batch
from binlake.spark_sink.changelog.delta_rs import DeltaRsChangelog
from binlake.spark_sink.delta import quote
from binlake.spark_sink.layout import ORDER_KEY, TOMBSTONE_KEY, TOMBSTONE_TABLE
from binlake.spark_sink.mirror import batch as mirror_batch
from binlake.spark_sink.mirror import follower
from binlake.spark_sink.mirror.delta_rs_mirror import DeltaRsMirrors
from binlake.spark_sink.settings import SinkSettings
from tests.bench import sink_bench
from tests.sink.test_sink_semantics import ROUND_1, ROUND_2, ROUND_2B, ROUND_3, ROUND_4
from tests.support.delta_rows import query_rows
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

TOPIC = "binlake.events"
TARGETS = [
    Column("c_bool", "tinyint(1)", "boolean"),
    Column("c_i8", "tinyint", "int8"),
    Column("c_i16", "smallint", "int16"),
    Column("c_i32", "int", "int32"),
    Column("c_i64", "bigint", "int64"),
    Column("c_u64", "bigint unsigned", "uint64"),
    Column("c_integer", "number", "integer"),
    Column("c_dec", "decimal(10,2)", "decimal", 10, 2),
    Column("c_f32", "float", "float32"),
    Column("c_f64", "double", "float64"),
    Column("c_str", "text", "string"),
    Column("c_bytes", "blob", "bytes"),
    Column("c_date", "date", "date"),
    Column("c_time", "time", "time"),
    Column("c_ntz", "datetime(6)", "datetime", 6),
    Column("c_ts", "timestamp(6)", "timestamp", 6),
]
VALUES: list[Value] = [
    None,
    True,
    False,
    0,
    -1,
    300,
    2**40,
    2**63 - 1,
    -(2**63),
    1.5,
    -0.0,
    1e20,
    1.25e-5,
    "12",
    " 7 ",
    "abc",
    Decimal("123.455"),
    Decimal("-1.5"),
    Decimal("1E+3"),
    Decimal("99999999999999999999999.5"),
    BigInt(2**64 - 1),
    BigInt(-(2**70)),
    b"\x00\xff",
    dt.date(2024, 1, 2),
    dt.date(1969, 12, 31),
    dt.datetime(2024, 1, 2, 3, 4, 5, 120000),
    dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    SqlTime(-3_600_000_000),
    Unparsed("0000-00-00 00:00:00"),
]
"""Every value kind into a column of every type: each conversion the Spark mirror's SQL makes (``typemap``)."""
KEYS: list[tuple[Column, list[Value]]] = [
    (Column("k", "int", "int32"), [7, -7]),
    (Column("k", "bigint unsigned", "uint64"), [BigInt(2**64 - 1), 5]),
    (Column("k", "decimal(12,4)", "decimal", 12, 4), [Decimal("1.5000"), Decimal("-0.0100"), Decimal("20")]),
    (Column("k", "varchar(8)", "string"), ['q"uote', "tab\there", "\u00e9\u0001"]),
    (Column("k", "varbinary(4)", "bytes"), [b"\x00\xab"]),
    (Column("k", "date", "date"), [dt.date(2024, 2, 29)]),
    (Column("k", "datetime(6)", "datetime", 6), [dt.datetime(2024, 1, 2, 3, 4, 5, 100), dt.datetime(2024, 1, 2)]),
    (Column("k", "timestamp(6)", "timestamp", 6), [dt.datetime(2024, 1, 2, 3, 4, 5, tzinfo=dt.UTC)]),
    (Column("k", "double", "float64"), [0.1, 1e22, -2.5]),
    (Column("k", "float", "float32"), [1.1]),
    (Column("k", "tinyint(1)", "boolean"), [True]),
]
"""Key types and values whose deletes write tombstones: the key text both mirrors write must be one."""


def _event(op: str, table: str, ok: int, columns: list[Column], image: dict[str, Value]) -> ChangeEvent:
    return ChangeEvent(
        op=op,  # type: ignore[arg-type]  # INSERT or DELETE: valid Op literals
        source=Source("test", "mysql", "v", None, table),
        order_key=f"{ok:020d}.{0:020d}.{0:06d}",
        ts_ms=ok,
        ingest_ts_ms=None,
        primary_key=[columns[0].name],
        columns=Columns(columns),
        before=image if op == "DELETE" else None,
        after=None if op == "DELETE" else image,
        changed_columns=None,
        ddl=None,
        origin=Origin("vendor", 1, ok, 0),
    )


def _value_events() -> list[bytes]:
    """Every value kind into every column type (table ``v.matrix``), and deleted keys of every key type."""
    columns = [Column("id", "int", "int32"), *TARGETS]
    events = [
        _event("INSERT", "matrix", 1 + i, columns, {"id": i, **{c.name: value for c in TARGETS}})
        for i, value in enumerate(VALUES)
    ]
    ok = 1_000
    for column, keys in KEYS:
        table = f"key_{column.logical_type}"
        for key in keys:
            events.append(_event("INSERT", table, ok, [column], {"k": key}))
            events.append(_event("DELETE", table, ok + 1, [column], {"k": key}))
            ok += 2
    return [avro.encode(e) for e in events]


def _changelog_round(store: DeltaRsChangelog, messages: list[bytes], first_offset: int) -> None:
    records = [
        KafkaRecord(TOPIC, 0, first_offset + i, 1_764_000_000_000 + i, None, value) for i, value in enumerate(messages)
    ]
    store.write(changelog_batch(records), records)


def _spark_rows(spark: SparkSession, uri: str, first: int, last: int) -> DataFrame:
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", str(first))
        .option("endingVersion", str(last))
        .load(uri)
    )
    return feed.where(F.col("_change_type") == "insert").drop("_change_type", "_commit_version", "_commit_timestamp")


def _table_rows(spark: SparkSession, uri: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The table as Spark reads it (once per table, at the end: Spark reads what the writer without Spark wrote)."""
    frame = spark.read.format("delta").load(uri)
    columns = sorted(frame.columns)
    rows = [tuple(r) for r in frame.select(*[quote(c) for c in columns]).collect()]
    return columns, sorted(rows, key=repr)


def _rows(uri: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The table as delta-rs reads it: after every round, in milliseconds where a Spark read takes a second."""
    columns, rows = query_rows(DeltaTable(uri), "SELECT * FROM t")
    order = sorted(range(len(columns)), key=columns.__getitem__)
    return [columns[i] for i in order], sorted((tuple(row[i] for i in order) for row in rows), key=repr)


def _properties(uri: str) -> dict[str, str]:
    return {k: v for k, v in DeltaTable(uri).metadata().configuration.items() if k.startswith("binlake.")}


def _floors(uri: str) -> list[tuple[Any, ...]]:
    """The newest tombstone of every deleted key."""
    if not DeltaTable.is_deltatable(uri):
        return []
    by = f"{TOMBSTONE_TABLE}, {TOMBSTONE_KEY}"
    return sorted(query_rows(DeltaTable(uri), f"SELECT {by}, max({ORDER_KEY}) FROM t GROUP BY {by}")[1])


def _mirrors(settings: SinkSettings) -> list[str]:
    root = Path(settings.lake()) / "mirror"
    return sorted(p.name for p in root.iterdir()) if root.is_dir() else []


def test_the_mirror_without_spark_equals_the_spark_mirror(spark: SparkSession, tmp_path: Path) -> None:
    # Tombstones compacted whenever they hold more than two files beyond one per table: often, in both lakes.
    by_spark = sink_settings_for_tests(lake_uri=str(tmp_path / "spark"), type_widening=False, tombstone_compact_files=2)
    by_python = sink_settings_for_tests(
        lake_uri=str(tmp_path / "python"), type_widening=False, tombstone_compact_files=2
    )
    changelog = by_spark.changelog_uri()
    store = DeltaRsChangelog(changelog, by_spark.quarantine_uri(), "writer", partition_by=[])
    store.resume(TOPIC, [0])
    workload = [item.value for item in sink_bench.generate(1_000, seed=5)]
    rounds: list[list[bytes]] = [[avro.encode(e) for e in events] for events in (ROUND_1, ROUND_2, ROUND_2B)]
    rounds.insert(1, _value_events())
    rounds += [workload[:500], [avro.encode(e) for e in ROUND_3], workload[500:], [avro.encode(e) for e in ROUND_4]]
    mirrors = DeltaRsMirrors(by_python, "python-mirror")
    offset = 0
    for batch_id, messages in enumerate(rounds):
        first = DeltaTable(changelog).version() + 1 if DeltaTable.is_deltatable(changelog) else 0
        _changelog_round(store, messages, offset)
        offset += len(messages)
        last = DeltaTable(changelog).version()
        mirror_batch.process(by_spark, "spark-mirror", _spark_rows(spark, changelog, first, last), batch_id)
        events = follower.read_range(DeltaTable(changelog), first, last)
        assert not mirrors.apply(events, batch_id).skipped
        # The batch again (a crash before its commit log entry): tables whose commit holds the batch's transaction
        # are skipped (a MERGE that changes nothing commits nothing, so not all); the rest change nothing.
        assert set(mirrors.apply(events, batch_id).skipped) <= set(events.rows)
        assert _mirrors(by_python) == _mirrors(by_spark), batch_id
        for name in _mirrors(by_spark):
            spark_uri, python_uri = f"{by_spark.lake()}/mirror/{name}", f"{by_python.lake()}/mirror/{name}"
            assert _properties(python_uri) == _properties(spark_uri), (batch_id, name)
            assert _rows(python_uri) == _rows(spark_uri), (batch_id, name)
        assert _floors(by_python.tombstones_uri()) == _floors(by_spark.tombstones_uri()), batch_id
    for name in _mirrors(by_spark):
        spark_uri, python_uri = f"{by_spark.lake()}/mirror/{name}", f"{by_python.lake()}/mirror/{name}"
        assert _table_rows(spark, python_uri) == _table_rows(spark, spark_uri), name
    modes = [h.get("operationParameters", {}).get("mode") for h in DeltaTable(by_python.tombstones_uri()).history()]
    assert "Overwrite" in modes, modes  # the tombstones were compacted
