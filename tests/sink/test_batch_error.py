"""A failed micro-batch (``spark_sink.batch_error``), on real streaming queries: the query fails with the
cause in a short message, even when the JVM's error text is huge, and a stop inside a JVM call still stops
the query cleanly.

Without the guard, a JVM error of 200,000 characters raised from ``foreachBatch`` kills the query's thread
with a ``StackOverflowError`` in Spark's "was it stopped?" regex, and the cause is lost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from binlake.spark_sink.batch_error import guarded
from tests.support.spark_fixtures import spark

pytestmark = [pytest.mark.integration]
__all__ = ["spark"]


def _query(spark: SparkSession, tmp_path: Path, each: Callable[[DataFrame, int], None]) -> StreamingQuery:
    source = tmp_path / "source"
    spark.range(3).write.parquet(str(source))
    return (
        spark.readStream.schema("id LONG")
        .parquet(str(source))
        .writeStream.foreachBatch(guarded("binlake-test", each))
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )


def test_a_huge_jvm_error_fails_the_query_with_its_cause(spark: SparkSession, tmp_path: Path) -> None:
    def each(frame: DataFrame, batch_id: int) -> None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        jvm.java.lang.Long.parseLong("9" * 200_000)  # NumberFormatException, the input in its message

    query = _query(spark, tmp_path, each)
    with pytest.raises(StreamingQueryException) as failed:
        query.awaitTermination()
    message = str(failed.value)
    assert "binlake-test batch 0 failed: java.lang.NumberFormatException: For input string" in message
    assert "StackOverflowError" not in message
    # The 200,000-character input is cut (each cause's first line: at most 500 characters).
    assert "9" * 500 not in message
    assert len(message) < 200_000 // 10


def test_a_python_error_fails_the_query_with_its_type_and_text(spark: SparkSession, tmp_path: Path) -> None:
    def each(frame: DataFrame, batch_id: int) -> None:
        raise ValueError(f"rows {frame.count()}")

    query = _query(spark, tmp_path, each)
    with pytest.raises(StreamingQueryException, match=r"binlake-test batch 0 failed: builtins.ValueError: rows 3"):
        query.awaitTermination()


def test_a_stop_inside_a_jvm_call_stops_the_query_without_error(spark: SparkSession, tmp_path: Path) -> None:
    inside = threading.Event()

    def each(frame: DataFrame, batch_id: int) -> None:
        jvm = spark.sparkContext._jvm
        assert jvm is not None
        inside.set()
        jvm.java.lang.Thread.sleep(120_000)  # on the query's own thread (py4j's pinned threads): interrupted

    query = _query(spark, tmp_path, each)
    assert inside.wait(120)
    query.stop()
    assert not query.isActive
    assert query.exception() is None
