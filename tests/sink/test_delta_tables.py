"""``delta``: whether a table holds data without a Spark job; a table created with its first rows.

``holds_files``:
A mirror batch asks it of every table it touches (may the batch append instead
of MERGE? are there tombstones to read?), so a job per call is a job per table
per batch. Real Spark and Delta: the answers for no table, a new empty table,
a table with rows and a table emptied again, the absence of jobs, and the
fallback when the checksum files are gone (an operator's clean-up, a writer
that writes none).

``create_as``: a new mirror is created by its first write, in one commit
(a creation and an append were two, about twice the driver time): its schema,
partitions and properties as a ``CREATE TABLE`` gives them (its columns
nullable: a CTAS declares no NOT NULL); a second call (a replayed batch)
leaves the table as it is; a creation killed before its first commit is made
again (``create`` too), and a folder of foreign files stops it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql.types import LongType, StringType, StructField, StructType

from binlake.spark_sink import delta
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

SCHEMA = StructType([StructField("id", LongType()), StructField("v", StringType())])


def _jobs_while(spark: SparkSession, group: str, call: Callable[[], bool]) -> tuple[bool, int]:
    """``call()``'s result and the number of Spark jobs it ran (counted by job group)."""
    context = spark.sparkContext
    context.setJobGroup(group, "holds_files test")
    try:
        result = call()
    finally:
        # None removes the property (the stub types the value as str only).
        context.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]
    return result, len(context.statusTracker().getJobIdsForGroup(group))


def test_holds_files_reads_the_checksum_and_runs_no_job(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    assert delta.holds_files(spark, uri) is False  # no table

    delta.create(spark, uri, SCHEMA)
    answer, jobs = _jobs_while(spark, "holds-empty", lambda: delta.holds_files(spark, uri))
    assert (answer, jobs) == (False, 0)

    spark.createDataFrame([(1, "a"), (2, "b")], SCHEMA).write.format("delta").mode("append").save(uri)
    answer, jobs = _jobs_while(spark, "holds-rows", lambda: delta.holds_files(spark, uri))
    assert (answer, jobs) == (True, 0)

    spark.sql(f"DELETE FROM {delta.ref(uri)}")
    answer, jobs = _jobs_while(spark, "holds-emptied", lambda: delta.holds_files(spark, uri))
    assert (answer, jobs) == (False, 0)


def test_holds_files_without_checksums_asks_the_log(spark: SparkSession, tmp_path: Path) -> None:
    folder = tmp_path / "t"
    uri = folder.as_uri()
    delta.create(spark, uri, SCHEMA)
    spark.createDataFrame([(1, "a")], SCHEMA).write.format("delta").mode("append").save(uri)
    crcs = list((folder / "_delta_log").glob("*.crc"))
    assert crcs  # Delta wrote them: the case above is the usual one
    for crc in crcs:
        crc.unlink()
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # forget the checksums it had read
    assert delta.holds_files(spark, uri) is True


KEYED = StructType([StructField("id", LongType()), StructField("v", StringType())])


def _commits(spark: SparkSession, uri: str) -> list[str]:
    rows = DeltaTable.forPath(spark, uri).history().orderBy("version").select("operation").collect()
    return [row["operation"] for row in rows]


def test_create_as_makes_the_table_and_its_rows_one_commit(spark: SparkSession, tmp_path: Path) -> None:
    uri = (tmp_path / "t").as_uri()
    # The rows as a mirror batch gives them: ints the schema types wider, the key non-NULL by a filter.
    rows = spark.createDataFrame([(1, "a"), (2, "b"), (None, "c")], "id int, v string").where("id IS NOT NULL")
    props = {"binlake.primary_key": '["id"]', "binlake.source_table": "shop.t", "delta.enableTypeWidening": "true"}
    delta.create_as(rows, uri, KEYED, partition_by=["v"], properties=props)
    assert _commits(spark, uri) == ["CREATE TABLE AS SELECT"]
    found = delta.state(spark, uri)
    assert found is not None
    assert found.schema == KEYED  # id widened to BIGINT
    assert {k: found.properties.get(k) for k in props} == props
    detail = DeltaTable.forPath(spark, uri).detail().first()
    assert detail is not None and detail["partitionColumns"] == ["v"]
    assert sorted(tuple(r) for r in spark.read.format("delta").load(uri).collect()) == [(1, "a"), (2, "b")]

    # A replayed batch: the table is there, with the rows the first run wrote; nothing is written twice.
    delta.create_as(rows, uri, KEYED, partition_by=["v"], properties=props)
    assert _commits(spark, uri) == ["CREATE TABLE AS SELECT"]
    assert spark.read.format("delta").load(uri).count() == 2


def _killed_creation(spark: SparkSession, folder: Path, *, log_made_by_delta: bool = False) -> None:
    """What a creation SIGKILLed before its first commit leaves (seen in make chaos): the log folder with an
    empty ``_staged_commits`` and the data files it had written. ``log_made_by_delta``: the log's folders as
    ``DeltaLog.createLogDirectoriesIfNotExists`` makes them (what ``txn_append.create`` leaves)."""
    if log_made_by_delta:
        gateway: Any = spark.sparkContext._jvm
        gateway.org.apache.spark.sql.delta.DeltaLog.forTable(
            spark._jsparkSession, folder.as_uri()
        ).createLogDirectoriesIfNotExists()
        assert (folder / "_delta_log").is_dir()
    else:
        (folder / "_delta_log" / "_staged_commits").mkdir(parents=True)
    spark.createDataFrame([(9, "orphan")], "id long, v string").write.parquet(str(tmp := folder.parent / "files"))
    for written in tmp.iterdir():
        if written.name.endswith(".parquet"):
            written.rename(folder / written.name)


@pytest.mark.parametrize("how", ["create_as", "create", "create_as after its own kill"])
def test_a_creation_killed_before_its_first_commit_is_made_again(spark: SparkSession, tmp_path: Path, how: str) -> None:
    """Delta took such a folder for a table, so CREATE TABLE IF NOT EXISTS did nothing, silently, at every
    replay: the mirror never got its rows (or a later append made a table without its properties)."""
    folder = tmp_path / "t"
    _killed_creation(spark, folder, log_made_by_delta=how.endswith("own kill"))
    uri = folder.as_uri()
    props = {"binlake.source_table": "shop.t"}
    if how.startswith("create_as"):
        rows = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
        delta.create_as(rows, uri, KEYED, partition_by=["v"], properties=props)
    else:
        delta.create(spark, uri, KEYED, partition_by=["v"], properties=props)
    found = delta.state(spark, uri)
    assert found is not None and found.version == 0
    assert found.properties.get("binlake.source_table") == "shop.t"
    expected = [(1, "a"), (2, "b")] if how.startswith("create_as") else []
    assert sorted(tuple(r) for r in spark.read.format("delta").load(uri).collect()) == expected  # no orphan row


def test_create_as_makes_what_a_ctas_makes(spark: SparkSession, tmp_path: Path) -> None:
    """The creation is Delta's transaction, not the SQL command: the same protocol, table features, schema
    and commit as a ``CREATE TABLE AS SELECT`` of the same rows and properties."""
    rows = spark.createDataFrame([(1, "a"), (2, "b")], "id long, v string")
    props = {"binlake.source_table": "shop.t", delta.DELETION_VECTORS: "true", "delta.enableTypeWidening": "true"}
    ours, theirs = (tmp_path / "ours").as_uri(), (tmp_path / "theirs").as_uri()
    delta.create_as(rows, ours, KEYED, properties=props)
    rows.createOrReplaceTempView("ctas_rows")
    spark.sql(
        f"CREATE TABLE delta.`{theirs}` USING delta TBLPROPERTIES ("
        + ", ".join(f"'{k}' = '{v}'" for k, v in props.items())
        + ") AS SELECT * FROM ctas_rows"
    )
    fields = ["minReaderVersion", "minWriterVersion", "tableFeatures", "properties", "partitionColumns", "numFiles"]
    made = [DeltaTable.forPath(spark, uri).detail().select(*fields).first() for uri in (ours, theirs)]
    assert made[0] == made[1]
    history = [
        DeltaTable.forPath(spark, uri).history().select("operation", "operationParameters").collect()
        for uri in (ours, theirs)
    ]
    assert history[0] == history[1]
    assert [delta.schema(spark, uri) for uri in (ours, theirs)] == [KEYED, KEYED]


@pytest.mark.parametrize("how", ["create_as", "create"])
def test_files_without_a_delta_log_stop_the_creation(spark: SparkSession, tmp_path: Path, how: str) -> None:
    """A folder of other files is not binlake's to empty: the creation says so instead of doing nothing."""
    folder = tmp_path / "t"
    spark.createDataFrame([(9, "x")], "id long, v string").write.parquet(str(folder))
    with pytest.raises(RuntimeError, match="holds files but no Delta log"):
        if how == "create_as":
            delta.create_as(spark.createDataFrame([(1, "a")], "id long, v string"), folder.as_uri(), KEYED)
        else:
            delta.create(spark, folder.as_uri(), KEYED)
    assert any(p.name.endswith(".parquet") for p in folder.iterdir())


def test_create_as_records_the_sessions_transaction_id(spark: SparkSession, tmp_path: Path) -> None:
    """As a CTAS under ``idempotent_dml`` did: the lake's ownership check reads the id from the new table."""
    uri = (tmp_path / "t").as_uri()
    with delta.idempotent_dml(spark, "binlake-test", 7):
        delta.create_as(spark.createDataFrame([(1, "a")], "id long, v string"), uri, KEYED)
    assert delta.transactions(spark, uri) == {"binlake-test": 7}
