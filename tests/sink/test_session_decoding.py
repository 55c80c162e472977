"""A sink session (spark_sink/session.py) in a real Spark: binlake's jar decodes the lossless values, and
Python workers run the sink's own interpreter."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import BigInt, Unparsed
from binlake.spark_sink import jvm
from binlake.spark_sink.events.source import KAFKA_SCHEMA, decode
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]


def _event(offset: int, after: dict[str, object]) -> ChangeEvent:
    columns = [Column("id", "bigint unsigned", "uint64"), Column("amount", "decimal(38,10)", "decimal", 38, 10)]
    columns += [Column("blob", "blob", "bytes"), Column("day", "date", "date"), Column("note", "text", "string")]
    return ChangeEvent(
        op="INSERT",
        source=Source("test", "mysql", "db", None, "t"),
        order_key=f"{0:020d}.{offset:020d}.{0:06d}",
        ts_ms=1_700_000_000_000 + offset,
        ingest_ts_ms=None,
        primary_key=["id"],
        columns=Columns(columns),
        before=None,
        after=after,  # type: ignore[arg-type]  # the test's values are valid image values
        changed_columns=None,
        ddl=None,
        origin=Origin("vendor", 0, offset, 0),
    )


def test_the_jar_decodes_lossless_values(spark: SparkSession) -> None:
    assert jvm.built_jar() is not None, "make builds spark_sink/jvm/binlake-spark.jar (needs javac)"
    events = [
        _event(1, {"id": BigInt(2**64 - 1), "amount": Decimal("-0.0000000001"), "blob": b"\x00\xff", "note": None}),
        _event(2, {"id": BigInt(7), "day": Unparsed("0000-00-00"), "note": "雪"}),
    ]
    rows = [(None, avro.encode(event), "t", 0, i, None, 0) for i, event in enumerate(events)]
    decoded = decode(spark.createDataFrame(rows, KAFKA_SCHEMA)).orderBy("_kafka_offset").collect()
    first, second = (row["_event"]["after"] for row in decoded)
    assert first["id"]["member_BigInteger"]["digits"] == str(2**64 - 1)
    assert first["amount"]["member_Decimal"]["digits"] == "-0.0000000001"
    assert bytes(first["blob"]["member_bytes"]) == b"\x00\xff"
    assert "day" not in first  # absent: unknown, not NULL
    assert "note" in first and first["note"] is None  # NULL: known to be NULL
    assert second["day"]["member_Unparsed"]["text"] == "0000-00-00"
    assert second["note"]["member_string"] == "雪"


def test_python_workers_run_the_sinks_interpreter(spark: SparkSession) -> None:
    # Spark's default worker is the first python3 on PATH: under another Python (3.12, 3.13) the sink's
    # Python UDFs failed with PYTHON_VERSION_MISMATCH.
    import sys

    worker = spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()
    assert worker == [sys.executable]


def test_py4j_remembers_the_names_that_are_no_class(spark: SparkSession) -> None:
    """A sink session's py4j lookups go through binlake's strategy: a name that is no class is searched for
    once per class loader, and classes are still found (package walks included)."""
    gateway = spark.sparkContext._jvm
    assert gateway is not None
    reflection = getattr(gateway, "py4j.reflection.ReflectionUtil")
    strategy = reflection.getClassLoadingStrategy()
    assert strategy.getClass().getName() == "io.binlake.spark.KnownMissingClasses"
    # A walk through packages (each a failed lookup, then remembered) reaches the class, twice.
    for _ in range(2):
        assert str(gateway.org.apache.hadoop.fs.Path("file:/tmp/x").getName()) == "x"
    missing = "io.binlake.NoSuchClass"
    for _ in range(2):
        with pytest.raises(Exception, match=r"ClassNotFound|NoSuchClass"):
            strategy.classForName(missing)
    # Remembered per loader: the same name asked of py4j again gets the remembered answer (the JVM's type).
    with pytest.raises(Exception, match=r"KnownMissingClasses\$Missing"):
        strategy.classForName(missing)
