"""A failed micro-batch (``spark_sink.batch_error``), on real streaming queries: the query fails with the
cause in a short message, even when the JVM's error text is huge, and a stop inside a JVM call still stops
the query cleanly.

Why: when a query is stopped, Spark reads the text of its batch function's error with a regex that recurses
once per character (``StreamExecution.isInterruptionException``). Without the guard, a stop during a JVM call
killed the query's thread with a ``StackOverflowError`` (the text carried the Java stack trace); the last test
runs Spark's check itself on both texts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery

from binlake.spark_sink.batch_error import guarded, summary
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


class _Interrupted(Exception):
    """A py4j error's shape: the JVM's throwable as ``java_exception``."""

    def __init__(self, java_exception: object) -> None:
        super().__init__("An error occurred while calling z:java.lang.Thread.sleep.")
        self.java_exception = java_exception


def test_spark_reads_the_guarded_text_of_a_stop_as_a_stop(spark: SparkSession) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    stream_execution = getattr(jvm, "org.apache.spark.sql.execution.streaming.runtime.StreamExecution")
    context = spark.sparkContext._jsc.sc()
    proxy = "An exception was raised by the Python Proxy. Return Message: Traceback (most recent call last):\n"
    error = _Interrupted(jvm.java.lang.InterruptedException("sleep interrupted"))
    guarded_text = f"{proxy}binlake.spark_sink.batch_error.BatchError: {summary('q', 0, error)}\n"
    assert stream_execution.isInterruptionException(jvm.py4j.Py4JException(guarded_text), context)
    # What py4j sent before: the error with the Java stack trace of the interrupted call.
    frames = "".join(f"\tat org.example.Frame{i}.call(Frame{i}.java:{i})\n" for i in range(200))
    unguarded = (
        f"{proxy}py4j.protocol.Py4JJavaError: An error occurred while calling z:java.lang.Thread.sleep.\n"
        f": java.lang.InterruptedException: sleep interrupted\n{frames}"
    )
    with pytest.raises(Exception, match="StackOverflowError"):
        stream_execution.isInterruptionException(jvm.py4j.Py4JException(unguarded), context)
