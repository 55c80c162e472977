"""Configured mirror names and partitions: the errors that stop the sink rather than mix or lose rows.

Real Spark and Delta, ``mirror.schema.prepare`` (the step that plans and
evolves a mirror) called the way a mirror batch calls it, and a new mirror
created by its first write (``NewMirror.write``) as the batch creates it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession

from binlake.spark_sink.mirror.plan import ColumnDesc, Descriptor
from binlake.spark_sink.mirror.schema import prepare
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

COLUMNS = (ColumnDesc("id", "int64", None, None), ColumnDesc("region", "string", None, None))
DESCRIPTOR = Descriptor(1, COLUMNS, ("id",))


def test_two_tables_under_one_name_stop_the_sink(spark: SparkSession, tmp_path: Path) -> None:
    settings = sink_settings_for_tests(
        lake_uri=tmp_path.as_uri(), table_names={"shop.*": "everything"}, partition_by={"shop.*": ["region"]}
    )
    _, _, new = prepare(spark, settings, "shop.orders", [DESCRIPTOR])
    assert new is not None  # created by the batch's first write, here with no rows
    new.write(spark.createDataFrame([], new.schema))
    detail = DeltaTable.forPath(spark, settings.mirror_uri("shop.orders")).detail().first()
    assert detail is not None
    assert detail["partitionColumns"] == ["region"]
    assert settings.mirror_uri("shop.items") == settings.mirror_uri("shop.orders")
    with pytest.raises(ValueError, match=r"belongs to source table shop\.orders, not shop\.items"):
        prepare(spark, settings, "shop.items", [DESCRIPTOR])
    prepare(spark, settings, "shop.orders", [DESCRIPTOR])  # its own table: evolves as usual


def test_a_partition_column_the_events_lack_is_an_error(spark: SparkSession, tmp_path: Path) -> None:
    settings = sink_settings_for_tests(lake_uri=tmp_path.as_uri(), partition_by={"shop.orders": ["day"]})
    with pytest.raises(ValueError, match=r"partition columns \['day'\].*\['id', 'region'\]"):
        prepare(spark, settings, "shop.orders", [DESCRIPTOR])
