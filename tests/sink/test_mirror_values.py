"""Values of every kind into mirror columns of other types, and tombstone keys, as the Spark mirror writes them.

One table (``v.conv``) whose columns cover the mirror types; each case is one row holding one value of a
kind (the event's value) in a column of another type (its descriptor's): the mirror holds it converted by
the mirror's SQL (``typemap``: ANSI ``try_cast``, half-up decimal rounding, Java's double text, base64 of
bytes in a string column), NULL where the conversion refuses it (out of range, a fraction into an integer,
a zero date). Deleted keys of two decimal widths and two integer widths leave tombstones whose key text is
the value's, not its width's. On real Kafka + Spark + Delta: events to a topic, ``binlake sink``
available-now, the mirror and the tombstones read back.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from decimal import Decimal
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import BigInt, SqlTime, Unparsed, Value
from binlake.spark_sink import job
from tests.support import kafka_tools
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

COLUMNS = [
    Column("id", "int", "int32"),
    Column("c_bool", "tinyint(1)", "boolean"),
    Column("c_i8", "tinyint", "int8"),
    Column("c_i32", "int", "int32"),
    Column("c_i64", "bigint", "int64"),
    Column("c_u64", "bigint unsigned", "uint64"),
    Column("c_dec", "decimal(10,2)", "decimal", 10, 2),
    Column("c_f64", "double", "float64"),
    Column("c_str", "text", "string"),
    Column("c_bytes", "blob", "bytes"),
    Column("c_date", "date", "date"),
    Column("c_time", "time", "time"),
    Column("c_ntz", "datetime(6)", "datetime", 6),
]
CASES: list[tuple[Value, str, object]] = [
    (True, "c_bool", True),
    (0, "c_bool", False),
    ("true", "c_bool", None),  # no string branch for booleans
    (300, "c_i8", None),  # out of range
    (BigInt(2**64 - 1), "c_u64", Decimal("18446744073709551615")),
    (Decimal("123.455"), "c_dec", Decimal("123.46")),  # half up
    (Decimal("123.455"), "c_i32", None),  # a fraction: ANSI try_cast refuses it
    (Decimal("1E+3"), "c_i64", 1000),  # the codec writes its digits as 1000
    (Decimal("99999999.995"), "c_dec", None),  # rounds out of range
    (True, "c_dec", Decimal("1.00")),
    (SqlTime(-5), "c_time", -5),
    (1e20, "c_str", "1.0E20"),  # Java's text of a double
    (b"\x00\xff", "c_str", "AP8="),  # bytes into a string: base64
    (b"\x00\xff", "c_bytes", b"\x00\xff"),
    (7, "c_f64", 7.0),
    ("7", "c_f64", None),
    (dt.date(1969, 12, 31), "c_date", dt.date(1969, 12, 31)),
    (dt.datetime(1970, 1, 1, 0, 0, 1), "c_ntz", dt.datetime(1970, 1, 1, 0, 0, 1)),
    (Unparsed("0000-00-00"), "c_str", None),  # a zero date: its text stays in the changelog only
    (None, "c_str", None),
]
KEYS: list[tuple[str, Column, Value]] = [
    ("dec_narrow", Column("k", "decimal(10,2)", "decimal", 10, 2), Decimal("1.50")),
    ("dec_wide", Column("k", "decimal(12,4)", "decimal", 12, 4), Decimal("1.5000")),
    ("int", Column("k", "int", "int32"), 7),
    ("bigint", Column("k", "bigint", "int64"), 7),
]
"""Deleted keys of the same value in columns of different widths: their tombstone key text is one."""


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


async def test_values_convert_into_the_mirror_types_and_tombstone_keys_are_one_text(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    events = [_event("INSERT", "conv", 1 + i, COLUMNS, {"id": i, column: v}) for i, (v, column, _) in enumerate(CASES)]
    for n, (table, key_column, key) in enumerate(KEYS):
        events.append(_event("INSERT", table, 100 + 2 * n, [key_column], {"k": key}))
        events.append(_event("DELETE", table, 101 + 2 * n, [key_column], {"k": key}))
    topic = kafka_tools.unique("values")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    await kafka_tools.produce(kafka_bootstrap, topic, [(None, avro.encode(e)) for e in events])
    settings = sink_settings_for_tests(topic=topic, lake_uri=str(tmp_path / "lake"))
    await asyncio.to_thread(job.run, spark, settings, kafka_settings(kafka_bootstrap))

    mirror = spark.read.format("delta").load(settings.mirror_uri("v.conv"))
    assert [f.name for f in mirror.schema.fields if not f.name.startswith("_binlake")] == [c.name for c in COLUMNS]
    rows = {row["id"]: row for row in mirror.collect()}
    found = {i: (name, rows[i][name]) for i, (_, name, _) in enumerate(CASES)}
    assert found == {i: (name, expected) for i, (_, name, expected) in enumerate(CASES)}
    for i, (_, name, _) in enumerate(CASES):  # the other columns: absent from the event, NULL
        assert [rows[i][c.name] for c in COLUMNS[1:] if c.name != name] == [None] * (len(COLUMNS) - 2), i

    tombstones = spark.read.format("delta").load(settings.tombstones_uri())
    keys = {row[0]: row[1] for row in tombstones.select("source_table", "key").collect()}
    assert keys == {"v.dec_narrow": '["1.5"]', "v.dec_wide": '["1.5"]', "v.int": '["7"]', "v.bigint": '["7"]'}
