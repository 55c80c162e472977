"""The MERGE's key condition (``mirror.key_filter``): the batch's keys as literals keep exactly the mirror rows
with those keys, for every key type it names; it names none where a literal may not compare as the column does.

On Spark: the condition filters a frame aliased ``t`` that holds the batch's keys and others, and must keep the
batch's ones, and no other (NULL included).
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from binlake.spark_sink.mirror.key_filter import BYTES_PER_KEY, key_condition
from tests.support.spark_fixtures import spark

pytestmark = [pytest.mark.integration]
__all__ = ["spark"]

CASES: list[tuple[DataType, list[Any], list[Any]]] = [
    # (type, the batch's keys, the mirror's other keys)
    (IntegerType(), [-2147483648, 0, 7, 2147483647], [1, -7]),
    (LongType(), [-(2**63), 3_000_000_000, 2**63 - 1], [2**62]),
    (ByteType(), [-128, 127], [0]),
    (DecimalType(20, 0), [Decimal(0), Decimal(2**64 - 1)], [Decimal(2**64 - 2)]),
    (DecimalType(12, 4), [Decimal("-0.0001"), Decimal("12345678.5000"), Decimal("0.0000")], [Decimal("0.0002")]),
    (DecimalType(38, 10), [Decimal("0E-10"), Decimal("-1.5"), Decimal(10**27)], [Decimal("1.5"), Decimal("1E-10")]),
    (StringType(), ["a", "it's", "back\\slash", "", "ünï ☃", "x'; DROP"], ["A", "its", "back\\\\slash"]),
    (BinaryType(), [b"", b"\x00\xff", b"'"], [b"\x00", b"\xff\x00"]),
    (DateType(), [dt.date(1, 1, 1), dt.date(2024, 2, 29)], [dt.date(2024, 3, 1)]),
    (TimestampNTZType(), [dt.datetime(2024, 3, 31, 2, 30, 0, 1)], [dt.datetime(2024, 3, 31, 2, 30)]),
    (BooleanType(), [True], [False]),
]


@pytest.mark.parametrize(("data_type", "batch", "others"), CASES, ids=[c[0].simpleString() for c in CASES])
def test_the_condition_keeps_exactly_the_batch_keys(
    spark: SparkSession, data_type: DataType, batch: list[Any], others: list[Any]
) -> None:
    source = spark.createDataFrame([(k,) for k in batch], StructType([StructField("_v0", data_type)]))
    condition = key_condition(source, [(0, "k y", data_type)], limit=100)
    assert condition is not None
    mirror = spark.createDataFrame(
        [(k,) for k in [*batch, *others, None]], StructType([StructField("k y", data_type)])
    ).alias("t")
    kept = [row[0] for row in mirror.where(condition).collect()]
    assert sorted(kept, key=repr) == sorted(batch, key=repr)


def test_a_composite_key_names_each_column(spark: SparkSession) -> None:
    schema = StructType([StructField("_v0", IntegerType()), StructField("_v2", StringType())])
    source = spark.createDataFrame([(1, "a"), (2, "b")], schema)
    condition = key_condition(source, [(0, "id", IntegerType()), (2, "region", StringType())], limit=10)
    assert condition == "t.`id` IN (1, 2) AND t.`region` IN ('a', 'b')"


@pytest.mark.parametrize("data_type", [DoubleType(), TimestampType()], ids=["double", "timestamp"])
def test_a_key_type_whose_literal_may_differ_gets_no_condition(spark: SparkSession, data_type: DataType) -> None:
    value = 0.0 if isinstance(data_type, DoubleType) else dt.datetime(2024, 10, 27, 2, 30)
    source = spark.createDataFrame([(value,)], StructType([StructField("_v0", data_type)]))
    assert key_condition(source, [(0, "k", data_type)], limit=10) is None


def test_more_keys_than_the_limit_or_none_get_no_condition(spark: SparkSession) -> None:
    schema = StructType([StructField("_v0", IntegerType())])
    source = spark.createDataFrame([(k,) for k in range(11)], schema)
    assert key_condition(source, [(0, "k", IntegerType())], limit=10) is None
    assert key_condition(source, [(0, "k", IntegerType())], limit=0) is None
    assert key_condition(source.limit(0), [(0, "k", IntegerType())], limit=10) is None
    assert key_condition(source, [(0, "k", IntegerType())], limit=11) is not None


def test_a_mirror_of_few_rows_per_key_gets_no_condition(spark: SparkSession) -> None:
    """Under ``BYTES_PER_KEY`` per batch key the literals would cost more than the rows they keep out."""
    source = spark.createDataFrame([(k,) for k in range(11)], StructType([StructField("_v0", IntegerType())]))
    keys: list[tuple[int, str, DataType]] = [(0, "k", IntegerType())]
    assert key_condition(source, keys, limit=100, mirror_bytes=11 * BYTES_PER_KEY - 1) is None
    assert key_condition(source, keys, limit=100, mirror_bytes=11 * BYTES_PER_KEY) is not None
