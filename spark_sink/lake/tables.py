"""Finding the lake's Delta tables and reading their facts: kind, version, rows, commit time, properties.

The lake (``SinkSettings.lake_uri``) holds ``changelog/``, ``quarantine/``,
``deleted_keys/`` (every mirror's tombstones), one ``mirror/<dir>/`` per source
table and, from sinks that write them, ``history/<dir>/`` (SCD2 versions) and
``tombstones/<dir>/`` (a table's deleted keys, as releases before
``deleted_keys/`` kept them).
``<dir>`` is the source table's name made path-safe (``settings.table_dir``),
so the name is read back from the table property ``binlake.source_table`` and
only falls back to the directory name when a table predates that property.

Directories are listed with the Hadoop FileSystem of the session (so ``s3a://``
works as well as local paths); every other fact comes from Delta.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from binlake.spark_sink import delta
from binlake.spark_sink.lake import entries
from binlake.spark_sink.lake.entries import SourceTableDirs, TableInfo
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.layout import KINDS, ORDER_KEY
from binlake.spark_sink.settings import SinkSettings

__all__ = [  # LakeError is re-exported: lake_facts and the tests import it from here
    "LakeError",
    "SourceTableDirs",
    "TableInfo",
    "find_source_table",
    "lake_exists",
    "max_order_key",
    "schema",
    "source_tables",
    "table_info",
]


def _hadoop_subdirs(spark: SparkSession, uri: str) -> list[str]:
    """Names of the sub-directories of ``uri`` ([] when it does not exist)."""
    jvm: Any = spark.sparkContext._jvm  # py4j gateway: untyped by nature
    java_context: Any = spark.sparkContext._jsc
    path = jvm.org.apache.hadoop.fs.Path(uri)
    fs = path.getFileSystem(java_context.hadoopConfiguration())
    if not fs.exists(path):
        return []
    return sorted(str(status.getPath().getName()) for status in fs.listStatus(path) if status.isDirectory())


def lake_exists(spark: SparkSession, settings: SinkSettings) -> bool:
    return bool(_hadoop_subdirs(spark, settings.lake()))


def source_tables(spark: SparkSession, settings: SinkSettings) -> list[SourceTableDirs]:
    """Every source table that has a mirror, tombstones or history table, sorted by name."""
    found = [
        (kind, name, f"{settings.lake()}/{folder}/{name}")
        for kind, folder in KINDS
        for name in _hadoop_subdirs(spark, f"{settings.lake()}/{folder}")
        if delta.exists(spark, f"{settings.lake()}/{folder}/{name}")  # not a folder Delta never committed to
    ]
    return entries.group(found, lambda uri: delta.properties(spark, uri))


def find_source_table(spark: SparkSession, settings: SinkSettings, table: str) -> SourceTableDirs | None:
    """The tables of source table ``table`` (by property, else by directory name), or None."""
    return entries.find(source_tables(spark, settings), table)


def table_info(spark: SparkSession, name: str, kind: str, uri: str) -> TableInfo | None:
    """Version, row count, last commit time and properties of the Delta table at ``uri``; None if absent."""
    if not delta.exists(spark, uri):
        return None
    table = DeltaTable.forPath(spark, uri)
    # unix_millis: a collected timestamp would be converted with the Python process's local zone.
    last = table.history(1).select("version", F.unix_millis("timestamp").alias("ms")).first()
    version = -1 if last is None else int(last["version"])
    committed = None if last is None or last["ms"] is None else datetime.fromtimestamp(last["ms"] / 1000, UTC)
    rows = table.toDF().count()  # Delta answers count(*) from the log's file statistics
    return TableInfo(name, kind, uri, version, rows, committed, delta.properties(spark, uri))


def max_order_key(spark: SparkSession, uri: str | None) -> str | None:
    """The largest ``_binlake_order_key`` of a mirror/tombstones table (None: absent, empty or no column)."""
    if uri is None or not delta.exists(spark, uri):
        return None
    frame = spark.read.format("delta").load(uri)
    if ORDER_KEY not in frame.columns:
        return None
    row = frame.agg(F.max(ORDER_KEY)).first()
    return None if row is None or row[0] is None else str(row[0])


def schema(spark: SparkSession, uri: str) -> StructType:
    return delta.schema(spark, uri)
