"""Mirror and history tables carry Delta deletion vectors (``BINLAKE_SINK_DELETION_VECTORS``): new ones from
their creation, those of an earlier release from their next batch; off, new tables are made without."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import DataType, LongType, StringType, StructField, StructType

from binlake.spark_sink import delta
from binlake.spark_sink.delta import DELETION_VECTORS
from binlake.spark_sink.layout import ORDER_KEY, PROP_KEY, PROP_SOURCE
from binlake.spark_sink.mirror import history, schema
from binlake.spark_sink.mirror.plan import ColumnDesc, Descriptor
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

TABLE = "db.t"
DESCS = [Descriptor(1, (ColumnDesc("id", "int64", None, None), ColumnDesc("v", "string", None, None)), ("id",))]


def test_new_mirrors_get_deletion_vectors_unless_turned_off(tmp_path: Path) -> None:
    on = sink_settings_for_tests(lake_uri=tmp_path.as_uri())
    _, _, new = schema.new_mirror(on, TABLE, DESCS)
    assert new.properties[DELETION_VECTORS] == "true"
    off = sink_settings_for_tests(lake_uri=tmp_path.as_uri(), deletion_vectors=False)
    _, _, new = schema.new_mirror(off, TABLE, DESCS)
    assert DELETION_VECTORS not in new.properties


def test_a_mirror_and_history_of_an_earlier_release_get_them_at_their_next_batch(
    spark: SparkSession, tmp_path: Path
) -> None:
    settings = sink_settings_for_tests(lake_uri=tmp_path.as_uri())
    uri = settings.mirror_uri(TABLE)
    fields = [StructField("id", LongType()), StructField("v", StringType()), StructField(ORDER_KEY, StringType())]
    delta.create(spark, uri, StructType(fields), properties={PROP_KEY: json.dumps(["id"]), PROP_SOURCE: TABLE})
    assert DELETION_VECTORS not in delta.properties(spark, uri)
    _, key, new = schema.prepare(spark, settings, TABLE, DESCS)
    assert new is None and key == ["id"]
    assert delta.properties(spark, uri)[DELETION_VECTORS] == "true"

    history_uri = settings.history_uri(TABLE)
    types: dict[str, DataType] = {"id": LongType(), "v": StringType()}
    history.prepare(spark, history_uri, TABLE, ["id"], types, fallbacks={})  # made without them
    assert DELETION_VECTORS not in delta.properties(spark, history_uri)
    features = schema.features(settings)
    history.prepare(spark, history_uri, TABLE, ["id"], types, fallbacks={}, features=features)
    assert delta.properties(spark, history_uri)[DELETION_VECTORS] == "true"
    version = delta.current_version(spark, history_uri)
    history.prepare(spark, history_uri, TABLE, ["id"], types, fallbacks={}, features=features)
    assert delta.current_version(spark, history_uri) == version  # once: nothing to change the second time
