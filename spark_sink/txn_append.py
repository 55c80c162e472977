"""An exactly-once Delta append (or overwrite) that does not rebuild the table's state on every commit.

Delta's own idempotent append (the writer options ``txnAppId`` / ``txnVersion``) first asks the table's
snapshot which transaction versions it holds (``OptimisticTransaction.txnVersion``). delta-spark 4.4
answers from the snapshot's whole state: three Spark jobs over the last checkpoint and the commits after
it, once per snapshot, and every append makes a new snapshot. On the changelog query, with its 1 s
triggers, that was the largest part of a micro-batch's fixed cost (``bench/results``).

The version's checksum file lists the same transactions (Delta writes them there unless a table has very
many). ``append`` reads them from the checksum of the snapshot its transaction starts from, skips a batch
the table already holds, and otherwise writes the rows with Delta's own writer of a transaction
(``OptimisticTransaction.writeFiles``: the files, their statistics, the table's constraints) and commits
them with the ``txn`` action, as Delta's writer does. The transaction marks the whole table as read, so
a commit by any other writer between its start and its commit fails it (Delta's conflict check), where
Delta's own check would have failed it on the transaction id: the sink is each of its tables' one writer,
and a replayed batch then finds its commit or makes it.

``create`` makes a new table with its first rows the same way, in the commit a ``CREATE TABLE AS SELECT``
makes, without the SQL command's analysis (a mirror's first batch, ``delta.create_as``).

``overwrite`` does the same for a rewrite of the whole table (a mirror small for its batch, ``merge.rewrite``):
the rows, computed from a version of the table, are written by the transaction, which removes every file of
that version (deletion vectors with them) in the same commit, a ``WRITE`` in mode ``Overwrite``.

Where the checksum cannot answer (no checksum, or one without transactions), there is no table yet, or
the rows' columns are not the table's (names and types; a schema change goes through Delta's writer),
``append`` does nothing and says so: the caller appends with Delta's writer.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

from py4j.protocol import Py4JJavaError
from pyspark.errors.exceptions.captured import convert_exception
from pyspark.sql import DataFrame
from pyspark.sql.types import StructField, StructType

DELTA: Final = "org.apache.spark.sql.delta"


def append(frame: DataFrame, uri: str, app_id: str, version: int, *, partition_by: list[str] | None) -> bool | None:
    """Append ``frame`` to the table at ``uri`` in one commit under (``app_id``, ``version``): True when
    committed, False when the table already held that commit (nothing written), None when this path cannot
    tell or cannot write (module doc; nothing written)."""
    return _write(frame, uri, app_id, version, partition_by=partition_by, replacing=None)


def overwrite(frame: DataFrame, uri: str, app_id: str, version: int, *, read_version: int) -> bool | None:
    """Replace every row of the table at ``uri`` with ``frame`` in one commit under (``app_id``, ``version``),
    as ``append`` does an append (the same answers). ``read_version``: the table version ``frame`` was computed
    from; a table at another version now is left to Delta's writer (None)."""
    return _write(frame, uri, app_id, version, partition_by=None, replacing=read_version)


def create(
    frame: DataFrame,
    uri: str,
    schema: StructType,
    *,
    partition_by: list[str],
    properties: dict[str, str],
    txn_id: tuple[str, int] | None,
) -> bool:
    """Create the table at ``uri`` holding ``frame`` (``schema``'s columns, in its types): its first version,
    one commit as a ``CREATE TABLE AS SELECT`` makes (the same protocol, properties and commit), without
    the SQL command's analysis and its checks of the path (``delta.create_as`` makes those that matter).
    ``txn_id``: the (app id, version) the commit records, as a CTAS records the session's (``delta.idempotent_dml``);
    the lake's ownership check reads it. False: a table was there already (nothing written)."""
    spark = frame.sparkSession
    jvm: Any = spark.sparkContext._jvm
    convert = jvm.scala.jdk.javaapi.CollectionConverters
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, uri)
    txn = log.startTransaction()
    if int(txn.readVersion()) >= 0:
        return False
    # The log's folders before any data file, as Delta's CREATE TABLE makes them: a creation killed before its
    # commit then leaves a log without commits, which the next attempt clears (``delta._clear_uncommitted``).
    log.createLogDirectoriesIfNotExists()
    configuration = jvm.java.util.HashMap()
    for name, value in properties.items():
        configuration.put(name, value)
    maps = getattr(getattr(jvm, "scala.collection.immutable.Map$"), "MODULE$")
    metadatas = getattr(getattr(jvm, f"{DELTA}.actions.Metadata$"), "MODULE$")
    nullable = StructType([_nullable(f) for f in schema.fields])  # as a CTAS declares its columns
    metadata = metadatas.apply(
        getattr(metadatas, "apply$default$1")(),  # a new table id
        None,
        None,
        getattr(metadatas, "apply$default$4")(),  # parquet
        nullable.json(),
        convert.asScala(jvm.java.util.ArrayList(partition_by)).toSeq(),
        getattr(maps, "from")(convert.asScala(configuration)),
        jvm.scala.Some(int(time.time() * 1000)),
    )
    try:
        # The protocol follows from the metadata (its table features' properties), as for a CTAS.
        txn.updateMetadataForNewTable(metadata)
        files = txn.writeFiles(frame._jdf)
        if txn_id is not None:
            files = files.appended(_set_transaction(jvm, *txn_id))
        creates = getattr(getattr(jvm, f"{DELTA}.DeltaOperations$CreateTable$"), "MODULE$")
        txn.commit(files, creates.apply(txn.metadata(), False, True, getattr(creates, "apply$default$4")()))
    except Py4JJavaError as error:
        raise convert_exception(error.java_exception) from None
    return True


def _nullable(field: StructField) -> StructField:
    return StructField(field.name, field.dataType, nullable=True, metadata=field.metadata)


def _write(
    frame: DataFrame, uri: str, app_id: str, version: int, *, partition_by: list[str] | None, replacing: int | None
) -> bool | None:
    spark = frame.sparkSession
    jvm: Any = spark.sparkContext._jvm
    log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, uri)
    txn = log.startTransaction()
    if int(txn.readVersion()) < 0 or (replacing is not None and int(txn.readVersion()) != replacing):
        return None
    held = checksum_transactions(jvm, txn.snapshot())
    if held is None or not _same_columns(frame.schema, txn.metadata(), partition_by, jvm):
        return None
    if held.get(app_id, -1) >= version:
        return False
    try:
        files = txn.writeFiles(frame._jdf)
        if replacing is not None:
            # Every file of the version the rows were read from, removed (with its deletion vector) in the commit.
            removed = jvm.java.util.ArrayList()
            for held_file in jvm.scala.jdk.javaapi.CollectionConverters.asJava(_all_files(txn)):
                removed.add(held_file.remove())
            files = files.appendedAll(jvm.scala.jdk.javaapi.CollectionConverters.asScala(removed).toSeq())
        txn.readWholeTable()
        done = _set_transaction(jvm, app_id, version)
        txn.commit(files.appended(done), _write_operation(jvm, txn.metadata(), overwrite=replacing is not None))
    except Py4JJavaError as error:
        # As PySpark raises a JVM error of a DataFrame call (a conflict: io.delta.exceptions.*, in its text).
        raise convert_exception(error.java_exception) from None
    return True


def _set_transaction(jvm: Any, app_id: str, version: int) -> Any:
    """Delta's ``txn`` action recording (``app_id``, ``version``) as committed now."""
    now_ms = int(time.time() * 1000)  # beyond 32 bits: py4j passes a java.lang.Long, as Option[Long] holds
    return getattr(jvm, f"{DELTA}.actions.SetTransaction")(app_id, version, jvm.scala.Some(now_ms))


def _all_files(txn: Any) -> Any:
    """The data files of the transaction's snapshot (a Scala ``Seq[AddFile]``): from its checksum where Delta
    listed them there (a small table's), else from its state (a Spark job)."""
    found = txn.snapshot().checksumOpt()
    if found.isDefined() and found.get().allFiles().isDefined():
        return found.get().allFiles().get()
    return txn.filterFiles()


def checksum_transactions(jvm: Any, snapshot: Any) -> dict[str, int] | None:
    """App id -> last version, as the (JVM) snapshot's checksum lists them; None if it lists none (or has none).
    Also ``delta.transactions``' answer where there is one."""
    found = snapshot.checksumOpt()
    if not found.isDefined():
        return None
    listed = found.get().setTransactions()
    if not listed.isDefined():
        return None
    convert = jvm.scala.jdk.javaapi.CollectionConverters
    return {str(t.appId()): int(t.version()) for t in convert.asJava(listed.get())}


def _same_columns(schema: StructType, metadata: Any, partition_by: list[str] | None, jvm: Any) -> bool:
    """Whether the rows have exactly the table's columns, of its types (nullability aside), and the partition
    columns asked for (if any) are the table's."""
    table = StructType.fromJson(json.loads(metadata.schemaString()))
    if {f.name: f.dataType.simpleString() for f in schema.fields} != {
        f.name: f.dataType.simpleString() for f in table.fields
    }:
        return False
    partitions = list(jvm.scala.jdk.javaapi.CollectionConverters.asJava(metadata.partitionColumns()))
    return partition_by is None or list(partition_by) == [str(c) for c in partitions]


def _write_operation(jvm: Any, metadata: Any, *, overwrite: bool = False) -> Any:
    """Delta's ``WRITE`` operation of an append or overwrite (what its writer records in the commit), with its
    defaults."""
    companion = getattr(getattr(jvm, f"{DELTA}.DeltaOperations$Write$"), "MODULE$")
    defaults = [getattr(companion, f"apply$default${i}")() for i in range(3, 10)]
    mode = jvm.org.apache.spark.sql.SaveMode.Overwrite if overwrite else jvm.org.apache.spark.sql.SaveMode.Append
    return companion.apply(mode, jvm.scala.Some(metadata.partitionColumns()), *defaults)
