"""A history table names its fallback columns as its mirror does (``binlake.fallbacks``).

It has the mirror's physical columns, fallback columns included (``q__string`` holds the values of ``q``
that are no integer); without the property a reader of the history alone takes those versions for
versions whose ``q`` is NULL. Found by ``make chaos``: oms-avro's ``price`` went to
``price__decimal_38_10`` and the history's current versions read as NULL prices.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import DataType, LongType, StringType

from binlake.spark_sink import delta
from binlake.spark_sink.layout import PROP_FALLBACKS
from binlake.spark_sink.mirror import history
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]


def test_history_names_the_mirrors_fallback_columns(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "history").as_uri()
    types: dict[str, DataType] = {"id": LongType(), "q": LongType()}
    history.prepare(spark, uri, "t.types", ["id"], types, fallbacks={})
    assert json.loads(delta.properties(spark, uri)[PROP_FALLBACKS]) == {}

    # A later batch routes strings of q to a fallback column: the history gets the column and its name.
    wider: dict[str, DataType] = {**types, "q__string": StringType()}
    history.prepare(spark, uri, "t.types", ["id"], wider, fallbacks={"q__string": "q"})
    assert json.loads(delta.properties(spark, uri)[PROP_FALLBACKS]) == {"q__string": "q"}
    assert "q__string" in delta.schema(spark, uri).fieldNames()

    # A new history of a mirror that already has the fallback is created with it.
    fresh = (tmp_path / "fresh").as_uri()
    history.prepare(spark, fresh, "t.types", ["id"], wider, fallbacks={"q__string": "q"})
    assert json.loads(delta.properties(spark, fresh)[PROP_FALLBACKS]) == {"q__string": "q"}
