"""Pure parts of the current-state read without Spark: DuckDB's names of the mirror types, and the exact values
``binlake current`` prints."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal

import pytest
from pyspark.sql.types import DataType

from binlake.spark_sink.lake.native import duckdb_connection
from binlake.spark_sink.mirror import typemap
from binlake.spark_sink.mirror.current_cli import _json_value, _text
from binlake.spark_sink.mirror.current_held import duckdb_type
from binlake.spark_sink.mirror.merge_rules import double_quotes, merged_read

pytestmark = pytest.mark.unit


def _type(logical: str, precision: int | None = None, scale: int | None = None) -> DataType:
    found = typemap.spark_type(logical, precision, scale)
    assert found is not None, logical
    return found


def _mirror_types() -> list[DataType]:
    logical = ["boolean", "int8", "int16", "int32", "int64", "float32", "float64", "string", "bytes", "date"]
    return [*map(_type, logical), _type("datetime", 6), _type("timestamp", 6), _type("decimal", 10, 2), _type("uint64")]


def test_every_mirror_type_has_a_duckdb_name_that_casts_to_the_same_arrow_type() -> None:
    connection = duckdb_connection()
    for spark_type in _mirror_types():
        name = duckdb_type(spark_type)
        assert connection.sql(f"SELECT CAST(NULL AS {name}) AS v").types[0] is not None, name
    assert duckdb_type(_type("uint64")) == "DECIMAL(20,0)"
    assert duckdb_type(_type("timestamp", 6)) == "TIMESTAMPTZ"
    assert duckdb_type(_type("datetime", 6)) == "TIMESTAMP"
    connection.close()


def test_the_merged_read_quotes_every_name_for_duckdb() -> None:
    read = merged_read(
        [('we"ird', "INTEGER"), ("id", "BIGINT"), ("_binlake_order_key", "VARCHAR")],
        physical=["id", 'we"ird'],
        key_index=[0],
        quote=double_quotes,
    )
    assert read.condition == 't."id" = s._v0'
    assert read.columns[0].endswith('AS "we""ird"')
    assert all("`" not in column for column in read.columns)


def test_lake_current_prints_values_exactly() -> None:
    assert _json_value(Decimal("99999999999999999999.000001")) == "99999999999999999999.000001"
    assert _json_value(2**64 - 1) == str(2**64 - 1)
    assert _json_value(2**53) == 2**53
    assert _json_value(True) is True
    assert _json_value(b"\x00\xff") == "0x00ff"
    when = dt.datetime(2024, 1, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    assert _json_value(when) == "2024-01-02T03:04:05.000006+00:00"
    assert _text(dt.date(2024, 2, 29)) == "2024-02-29"
