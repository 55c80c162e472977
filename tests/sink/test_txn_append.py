"""``txn_append``: an exactly-once append that rebuilds no table state, against real Spark and Delta.

Delta's own idempotent writer rebuilds the table's state (Spark jobs over its log) to answer whether the
transaction id is in the table; ``txn_append`` reads the answer from the version's checksum. Here: the
commit and its ``txn`` action, the replay that writes nothing, the jobs it runs (those of the write
alone), a commit by another writer while it writes (its commit fails, as Delta's id check would fail it),
and the cases it leaves to Delta's writer.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from pyspark.errors.exceptions.captured import CapturedException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType, StringType, StructField, StructType

from binlake.spark_sink import delta, txn_append
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

SCHEMA = StructType([StructField("id", LongType()), StructField("p", StringType())])


def _rows(spark: SparkSession, first: int, count: int) -> DataFrame:
    return spark.range(first, first + count).select("id", (F.col("id") % 2).cast("string").alias("p"))


def _jobs(spark: SparkSession, group: str, run: Callable[[], object]) -> int:
    """The number of Spark jobs ``run()`` ran (counted by job group)."""
    context = spark.sparkContext
    context.setJobGroup(group, "txn_append test")
    try:
        run()
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return len(context.statusTracker().getJobIdsForGroup(group))


def test_commits_once_under_its_id_and_a_replay_writes_nothing(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    delta.create(spark, uri, SCHEMA, partition_by=["p"])
    rows = _rows(spark, 0, 10)

    assert txn_append.append(rows, uri, "app", 0, partition_by=["p"]) is True
    assert txn_append.append(rows, uri, "app", 0, partition_by=["p"]) is False  # the batch replayed
    assert txn_append.append(_rows(spark, 10, 5), uri, "app", 1, partition_by=None) is True
    assert txn_append.append(_rows(spark, 15, 5), uri, "other", 0, partition_by=["p"]) is True

    assert spark.read.format("delta").load(uri).count() == 20
    assert delta.transactions(spark, uri) == {"app": 1, "other": 0}
    history = spark.sql(f"DESCRIBE HISTORY {delta.ref(uri)}").orderBy("version").collect()
    assert [(h["operation"], h["operationParameters"]) for h in history[1:]] == [
        ("WRITE", {"mode": "Append", "partitionBy": '["p"]'})
    ] * 3


def test_runs_the_jobs_of_the_write_alone(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    delta.create(spark, uri, SCHEMA, partition_by=["p"])
    for batch in range(3):  # a few commits: a state to rebuild, were it rebuilt
        assert txn_append.append(_rows(spark, batch * 10, 10), uri, "app", batch, partition_by=["p"])

    plain = _jobs(spark, "plain", lambda: _rows(spark, 0, 10).write.parquet(str(tmp_path / "plain")))
    ours = _jobs(spark, "ours", lambda: txn_append.append(_rows(spark, 30, 10), uri, "app", 3, partition_by=["p"]))
    writer = _jobs(spark, "writer", lambda: delta.append(_rows(spark, 40, 10), uri, "app", 4, options={"x": "1"}))

    assert ours == plain
    assert writer > ours  # Delta's writer rebuilds the state to check the id


def test_a_commit_by_another_writer_meanwhile_fails_it(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    schema = StructType([*SCHEMA.fields, StructField("slow", StringType())])
    delta.create(spark, uri, schema)
    # The rows take 3 s to compute (a JVM sleep per row), so the other commit lands while they are written.
    slow = _rows(spark, 0, 1).withColumn("slow", F.expr("reflect('java.lang.Thread', 'sleep', 3000L)"))
    other = threading.Timer(1.0, lambda: delta.append(_rows(spark, 100, 1).withColumn("slow", F.lit("x")), uri, "w", 0))
    other.start()
    with pytest.raises(CapturedException, match=r"(?i)concurrent"):
        txn_append.append(slow, uri, "app", 0, partition_by=None)
    other.join()

    # The replay writes the batch: its rows once, beside the other writer's.
    assert txn_append.append(slow.withColumn("slow", F.lit(None).cast("string")), uri, "app", 0, partition_by=None)
    assert sorted(r["id"] for r in spark.read.format("delta").load(uri).collect()) == [0, 100]


def test_leaves_to_delta_what_the_checksum_or_the_columns_cannot_answer(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    assert txn_append.append(_rows(spark, 0, 1), uri, "app", 0, partition_by=None) is None  # no table yet

    delta.create(spark, uri, SCHEMA, partition_by=["p"])
    assert txn_append.append(_rows(spark, 0, 1).withColumn("x", F.lit(1)), uri, "app", 0, partition_by=None) is None
    assert txn_append.append(_rows(spark, 0, 1).drop("p"), uri, "app", 0, partition_by=None) is None
    assert txn_append.append(_rows(spark, 0, 1), uri, "app", 0, partition_by=["id"]) is None
    wide = _rows(spark, 0, 1).withColumn("id", F.col("id").cast("int"))
    assert txn_append.append(wide, uri, "app", 0, partition_by=None) is None

    for crc in (tmp_path / "t" / "_delta_log").glob("*.crc"):
        crc.unlink()
    delta._forget(spark, uri)  # the JVM's cached log read its checksums already
    assert txn_append.append(_rows(spark, 0, 1), uri, "app", 0, partition_by=None) is None
    delta.append(_rows(spark, 0, 1), uri, "app", 0)  # Delta's writer then: once
    delta.append(_rows(spark, 0, 1), uri, "app", 0)
    assert spark.read.format("delta").load(uri).count() == 1


def test_an_overwrite_replaces_every_row_once_under_its_id(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    delta.create(spark, uri, SCHEMA, partition_by=["p"])
    assert txn_append.append(_rows(spark, 0, 10), uri, "app", 0, partition_by=["p"])
    # Deletion vectors on: a file with one marks its rows gone; the overwrite removes the file with it.
    spark.sql(f"ALTER TABLE {delta.ref(uri)} SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"DELETE FROM {delta.ref(uri)} WHERE id = 3")
    version = delta.current_version(spark, uri)
    assert version is not None
    held = delta.read_at(spark, uri, version)
    replaced = held.where("id < 6").union(_rows(spark, 100, 2))

    assert txn_append.overwrite(replaced, uri, "app", 1, read_version=version - 1) is None  # read elsewhere
    assert txn_append.overwrite(replaced, uri, "app", 1, read_version=version) is True
    assert txn_append.overwrite(replaced, uri, "app", 1, read_version=version + 1) is False  # the batch replayed

    ids = sorted(r["id"] for r in spark.read.format("delta").load(uri).collect())
    assert ids == [0, 1, 2, 4, 5, 100, 101]
    assert delta.transactions(spark, uri) == {"app": 1}
    last = spark.sql(f"DESCRIBE HISTORY {delta.ref(uri)}").orderBy(F.desc("version")).first()
    assert last is not None and last["operation"] == "WRITE"
    assert last["operationParameters"]["mode"] == "Overwrite"


def test_an_overwrite_runs_the_jobs_of_the_write_alone(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    delta.create(spark, uri, SCHEMA, partition_by=["p"])
    for batch in range(3):
        assert txn_append.append(_rows(spark, batch * 10, 10), uri, "app", batch, partition_by=["p"])
    version = delta.current_version(spark, uri)
    assert version is not None

    def ours() -> object:
        return txn_append.overwrite(_rows(spark, 0, 10), uri, "app", 3, read_version=version)

    def writer() -> None:
        frame = _rows(spark, 0, 10).write.format("delta").mode("overwrite").option("txnAppId", "app")
        frame.option("txnVersion", "4").save(uri)

    plain = _jobs(spark, "plain-o", lambda: _rows(spark, 0, 10).write.parquet(str(tmp_path / "plain")))
    # The files it removes come from the version's checksum (a small table's): no job to list them.
    assert _jobs(spark, "ours-o", ours) == plain
    assert _jobs(spark, "writer-o", writer) > plain  # Delta's writer rebuilds the state to check the id
