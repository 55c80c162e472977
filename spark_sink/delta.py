"""Small Delta Lake helpers: existence, pinned versions, creation, schema changes, idempotent commits.

Idempotency: every commit of a micro-batch carries Delta's ``txnAppId`` (the
sink's app id) and ``txnVersion`` (the micro-batch id). Appends pass them as
DataFrameWriter options; MERGE reads them from the session settings
``spark.databricks.delta.write.txnAppId`` / ``txnVersion`` (Delta's
``DeltaCommand.hasBeenExecuted``, used by MergeIntoCommand), see
docs/spark-sink.md. A commit whose (app id, version) the table already holds is
skipped by Delta itself, so a micro-batch replayed after a crash changes nothing.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType

from binlake.spark_sink import txn_append
from binlake.spark_sink.hadoop_files import HadoopFiles
from binlake.spark_sink.layout import COMMITTED_LOG_FILE, DELTA_LOG

TXN_APP_ID: Final = "spark.databricks.delta.write.txnAppId"
TXN_VERSION: Final = "spark.databricks.delta.write.txnVersion"


DELETION_VECTORS: Final = "delta.enableDeletionVectors"
"""The table property that turns on deletion vectors (a reader and writer table feature)."""


def quote(name: str) -> str:
    """A column or path identifier in backticks."""
    return "`" + name.replace("`", "``") + "`"


def ref(uri: str) -> str:
    """The SQL name of the Delta table at ``uri``."""
    return f"delta.{quote(uri)}"


@dataclass(frozen=True, slots=True)
class TableState:
    """A Delta table's latest version, schema and properties, as its transaction log says."""

    version: int
    schema: StructType
    properties: dict[str, str]


def _snapshot(spark: SparkSession, uri: str) -> Any:
    """The table's latest Delta ``Snapshot`` (a JVM object; version -1 when there is no table)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, uri)
    return log.update(False, jvm.scala.Option.empty(), jvm.scala.Option.empty())


def _forget(spark: SparkSession, uri: str) -> None:
    """Drop the JVM's cached ``DeltaLog`` of ``uri`` (its log folder was removed under it)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    path = jvm.org.apache.hadoop.fs.Path(uri)
    jvm.org.apache.spark.sql.delta.DeltaLog.invalidateCache(spark._jsparkSession, path)


def state(spark: SparkSession, uri: str) -> TableState | None:
    """The table's state from Delta's transaction log (None: no table there), without running a Spark job.

    Delta's ``DeltaLog`` is cached per path in the JVM, and ``update`` reads only
    the commits since its last look (a directory listing when nothing changed),
    so this costs milliseconds where ``DeltaTable.detail()``/``history()`` each
    run a job; a micro-batch asks it a few times per table. ``DeltaLog`` is
    Delta's internal API: the pinned delta-spark version is tested against it.
    """
    snapshot = _snapshot(spark, uri)
    version = int(snapshot.version())
    if version < 0:
        return None
    metadata = json.loads(snapshot.metadata().json())["metaData"]
    schema = StructType.fromJson(json.loads(metadata["schemaString"]))
    return TableState(version, schema, dict(metadata.get("configuration") or {}))


def holds_files(spark: SparkSession, uri: str) -> bool:
    """Whether the table's current version has any data file (False: no table, or an empty one).

    It lets a batch skip reading a table that cannot hold anything, such as a new mirror's or an
    empty tombstone table (``file_count``: no Spark job).
    """
    return file_count(spark, uri) > 0


def file_count(spark: SparkSession, uri: str) -> int:
    """The number of data files of the table's current version (0: no table).

    From the version's checksum file (Delta writes one per commit), so no Spark job. The checksum is
    read directly: ``Snapshot.numOfFiles`` reconstructs the table's state with a Spark job (1.4-4 s
    per call measured, per table and batch) even where the checksum is there. Without a checksum
    (written by another writer, or disabled) that job is the fallback.
    """
    found = _checksum(spark, uri)
    if found is None:
        return 0
    snapshot, checksum = found
    return int(snapshot.numOfFiles() if checksum is None else checksum.numFiles())


def size_bytes(spark: SparkSession, uri: str) -> int | None:
    """The bytes of the table's current data files, from the version's checksum (``file_count``); None when
    there is no table or no checksum (no Spark job is run to find out)."""
    found = _checksum(spark, uri)
    return None if found is None or found[1] is None else int(found[1].tableSizeBytes())


def _checksum(spark: SparkSession, uri: str) -> tuple[Any, Any] | None:
    """The table's current snapshot and its version's checksum (None: no checksum file); None: no table."""
    snapshot = _snapshot(spark, uri)
    if int(snapshot.version()) < 0:
        return None
    checksum = snapshot.checksumOpt()
    return snapshot, (checksum.get() if checksum.isDefined() else None)


def partition_values(spark: SparkSession, uri: str, column: str) -> set[str]:
    """The values of partition column ``column`` among the table's current files (none: no table).

    From Delta's state of the table (its log, cached in the JVM after the first read), not its data files:
    one small job over the file list, however many rows the files hold.
    """
    snapshot = _snapshot(spark, uri)
    if int(snapshot.version()) < 0:
        return set()
    files = DataFrame(snapshot.allFiles().toDF(), spark)
    values = files.select(F.col("partitionValues")[column].alias("v")).distinct().collect()
    return {str(row["v"]) for row in values if row["v"] is not None}


def transactions(spark: SparkSession, uri: str) -> dict[str, int]:
    """App id -> the last transaction version committed under it (Delta's ``txn`` actions).

    From the version's checksum file where it lists them (Delta writes them there unless a table has very
    many): ``Snapshot.transactions`` rebuilds the table's state with a Spark job, about a second per table.
    """
    snapshot = _snapshot(spark, uri)
    if int(snapshot.version()) < 0:
        return {}
    jvm: Any = spark.sparkContext._jvm
    listed = txn_append.checksum_transactions(jvm, snapshot)
    if listed is not None:
        return listed
    found = jvm.scala.jdk.javaapi.CollectionConverters.asJava(snapshot.transactions())
    return {str(app_id): int(found.get(app_id)) for app_id in found.keySet()}


def commit_actions(spark: SparkSession, uri: str, version: int) -> list[dict[str, Any]]:
    """The actions of one commit as the table's log holds them (``_delta_log/<version>.json``, one JSON
    action per line, the Delta protocol's commit file): one small read, no Spark job, no table state.
    None of them when the log holds no such commit (not yet made, or cleaned up)."""
    text = HadoopFiles(spark).read(f"{uri.rstrip('/')}/_delta_log/{version:020d}.json")
    return [] if text is None else [json.loads(line) for line in text.splitlines() if line.strip()]


def added(actions: list[dict[str, Any]]) -> list[tuple[str, dict[str, str | None]]] | None:
    """The data files a commit's ``add`` actions name, each as (path relative to the table's folder, decoded;
    its partition values). None if one lies outside the folder (an absolute path, which only other writers
    make)."""
    found: list[tuple[str, dict[str, str | None]]] = []
    for action in actions:
        add = action.get("add")
        if add is None:
            continue
        path = str(add["path"])
        if "://" in path or path.startswith("/"):
            return None
        found.append((urllib.parse.unquote(path), dict(add.get("partitionValues") or {})))  # paths are URI-encoded
    return found


def added_files(uri: str, actions: list[dict[str, Any]]) -> list[str] | None:
    """The data files a commit's ``add`` actions name, as paths to read (None: see ``added``)."""
    found = added(actions)
    root = uri.rstrip("/")
    return None if found is None else [f"{root}/{path}" for path, _ in found]


def release(frame: DataFrame) -> None:
    """Free a local checkpoint's blocks now (Spark would keep them until the RDD is garbage-collected)."""
    plan = frame._jdf.queryExecution().analyzed()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)


def empty(spark: SparkSession, schema: StructType) -> DataFrame:
    """No rows, with ``schema``: planned in the JVM (``createDataFrame([])`` would run Python on executors,
    which a cluster's workers may not have in the driver's version)."""
    return spark.range(0).select(*[F.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields])


def exists(spark: SparkSession, uri: str) -> bool:
    return state(spark, uri) is not None


def current_version(spark: SparkSession, uri: str) -> int | None:
    found = state(spark, uri)
    return None if found is None else found.version


def read_at(spark: SparkSession, uri: str, version: int) -> DataFrame:
    """The table as of ``version`` (reproducible within a micro-batch, even after the batch's own commits)."""
    return spark.read.format("delta").option("versionAsOf", str(version)).load(uri)


def create(
    spark: SparkSession,
    uri: str,
    schema: StructType,
    *,
    partition_by: list[str] | None = None,
    properties: dict[str, str] | None = None,
) -> None:
    columns = ", ".join(
        f"{quote(f.name)} {f.dataType.simpleString()}{'' if f.nullable else ' NOT NULL'}" for f in schema.fields
    )
    _create(spark, uri, f"({columns}) USING delta{_layout_sql(partition_by, properties)}")


def _create(spark: SparkSession, uri: str, clauses: str) -> None:
    """``CREATE TABLE IF NOT EXISTS <uri> <clauses>``, where a creation killed before its first commit is no table.

    Delta takes a path for an existing table when it holds a ``_delta_log`` folder (commits or not) or any
    file at all, and ``IF NOT EXISTS`` then does nothing, silently: after a creation killed between making
    its log folder and its first commit, every retry did nothing (a mirror whose rows never landed; a
    table created later by an append, without its properties and partitions). Such a location, whose log
    holds no commit, holds nothing any table version refers to: it is emptied first. A location that is no
    Delta table and not such a leftover is not touched, and the creation fails saying so.
    """
    if not _free_for_a_table(spark, uri):
        return
    spark.sql(f"CREATE TABLE IF NOT EXISTS {ref(uri)} {clauses}")
    if state(spark, uri) is None:
        raise RuntimeError(_NOT_DELTA.format(uri=uri))


def _free_for_a_table(spark: SparkSession, uri: str) -> bool:
    """Whether a table is to be created at ``uri``: False when one is there. A creation killed before its first
    commit left a log without commits and files no version refers to: they go (``_clear_uncommitted``). A
    folder holding other files is not touched: the creation fails saying so."""
    if state(spark, uri) is not None:
        return False
    _clear_uncommitted(spark, uri)
    if HadoopFiles(spark).names(uri):
        raise RuntimeError(_NOT_DELTA.format(uri=uri))
    return True


_NOT_DELTA: Final = (
    "Delta created no table at {uri}: the folder holds files but no Delta log; move them away (binlake writes "
    "only Delta tables there) and restart"
)


def _clear_uncommitted(spark: SparkSession, uri: str) -> None:
    """Remove the folder ``uri`` when its ``_delta_log`` holds no commit or checkpoint and its log's folders
    (``_staged_commits``, ``_commits``: commits not yet backfilled) are empty: a creation killed before its
    first commit."""
    files = HadoopFiles(spark)
    log = f"{uri.rstrip('/')}/{DELTA_LOG}"
    if not files.exists(log):
        return
    for name in files.names(log):
        if re.match(COMMITTED_LOG_FILE, name) or (name.startswith("_") and files.names(f"{log}/{name}")):
            return
    files.delete(uri)
    _forget(spark, uri)


def create_as(
    frame: DataFrame,
    uri: str,
    schema: StructType,
    *,
    partition_by: list[str] | None = None,
    properties: dict[str, str] | None = None,
) -> None:
    """Create the table with ``frame``'s rows as its first version: one commit, as ``CREATE TABLE IF NOT EXISTS
    ... AS SELECT`` makes it, where a creation and an append cost two. It is made by Delta's transaction
    (``txn_append.create``), not the SQL command, whose analysis and path checks cost a new table of a few
    hundred rows more than the write (bench/README.md).

    The table gets ``schema``'s columns and types (``frame``'s are selected and cast to them), all nullable
    (as a CTAS declares them, whatever the query), ``partition_by`` and ``properties`` (any, ``binlake.*``
    included, which an append cannot set). A table already there is left as it is: that is a replayed batch
    whose creation committed, its rows with it. The commit records the session's transaction id, if set
    (``idempotent_dml``), as a CTAS does. A creation killed before its commit left files no version
    refers to: they go first (``_clear_uncommitted``). A folder holding other files is not touched; the
    creation fails saying so.
    """
    spark = frame.sparkSession
    given = {f.name: f for f in frame.schema.fields}
    rows = frame.select(
        *[
            F.col(quote(f.name)) if given[f.name].dataType == f.dataType else F.col(quote(f.name)).cast(f.dataType)
            for f in schema.fields
        ]
    )
    if not _free_for_a_table(spark, uri):
        return
    app_id, version = spark.conf.get(TXN_APP_ID, None), spark.conf.get(TXN_VERSION, None)
    txn_id = None if app_id is None or version is None else (app_id, int(version))
    txn_append.create(rows, uri, schema, partition_by=partition_by or [], properties=properties or {}, txn_id=txn_id)


def _layout_sql(partition_by: list[str] | None, properties: dict[str, str] | None) -> str:
    """A new table's ``PARTITIONED BY`` and ``TBLPROPERTIES`` clauses (empty where none is given)."""
    sql = ""
    if partition_by:
        sql += f" PARTITIONED BY ({', '.join(quote(c) for c in partition_by)})"
    if properties:
        sql += f" TBLPROPERTIES ({_properties_sql(properties)})"
    return sql


def _properties_sql(values: dict[str, str]) -> str:
    return ", ".join(f"'{key}' = '{value.replace(chr(39), chr(39) * 2)}'" for key, value in values.items())


def schema(spark: SparkSession, uri: str) -> StructType:
    found = state(spark, uri)
    if found is None:
        raise ValueError(f"no Delta table at {uri}")
    return found.schema


def properties(spark: SparkSession, uri: str) -> dict[str, str]:
    found = state(spark, uri)
    return {} if found is None else found.properties


def add_columns(spark: SparkSession, uri: str, columns: list[tuple[str, DataType]]) -> None:
    if columns:
        spec = ", ".join(f"{quote(name)} {data_type.simpleString()}" for name, data_type in columns)
        spark.sql(f"ALTER TABLE {ref(uri)} ADD COLUMNS ({spec})")


def change_type(spark: SparkSession, uri: str, column: str, data_type: DataType) -> None:
    spark.sql(f"ALTER TABLE {ref(uri)} ALTER COLUMN {quote(column)} TYPE {data_type.simpleString()}")


def set_properties(spark: SparkSession, uri: str, values: dict[str, str]) -> None:
    spark.sql(f"ALTER TABLE {ref(uri)} SET TBLPROPERTIES ({_properties_sql(values)})")


def append(
    frame: DataFrame,
    uri: str,
    app_id: str,
    version: int,
    *,
    partition_by: list[str] | None = None,
    options: dict[str, str] | None = None,
) -> None:
    """Append exactly once: the write is skipped if the table already has (app_id, version).

    Into an existing table, without ``options``, by ``txn_append`` where the table's checksum lists its
    transactions (no rebuild of the table's state); else by Delta's writer, which checks the id itself.
    ``options``: more writer options; ``delta.*`` ones become table properties when the append creates the table.
    """
    if not options and txn_append.append(frame, uri, app_id, version, partition_by=partition_by) is not None:
        return
    writer = frame.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", str(version))
    for name, value in (options or {}).items():
        writer = writer.option(name, value)
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(uri)


@contextmanager
def idempotent_dml(spark: SparkSession, app_id: str, version: int) -> Iterator[None]:
    """MERGE/UPDATE/DELETE inside commit under (app_id, version), or not at all if already committed.

    The transaction id lives in session settings, shared by every thread: the
    sink sets it once around a batch's concurrent per-table MERGEs (all under
    the same id), and a nested use with the same id leaves it in place. A
    nested use with another id would change it under the other threads' feet,
    so it is refused.
    """
    wanted = (app_id, str(version))
    current = (spark.conf.get(TXN_APP_ID, None), spark.conf.get(TXN_VERSION, None))
    if current == wanted:
        yield
        return
    if current != (None, None):
        raise RuntimeError(f"a Delta transaction id {current} is already set; cannot commit under {wanted} inside it")
    spark.conf.set(TXN_APP_ID, app_id)
    spark.conf.set(TXN_VERSION, str(version))
    try:
        yield
    finally:
        spark.conf.unset(TXN_APP_ID)
        spark.conf.unset(TXN_VERSION)
