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

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from delta.tables import DeltaTable
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from spark_sink import delta
from spark_sink.lake.errors import LakeError
from spark_sink.layout import KINDS, ORDER_KEY, PROP_FALLBACKS, PROP_KEY, PROP_SOURCE, table_dir
from spark_sink.settings import SinkSettings

__all__ = [  # LakeError is re-exported: lake_facts and the tests import it from here
    "LakeError",
    "SourceTableDirs",
    "TableInfo",
    "fallbacks",
    "find_source_table",
    "lake_exists",
    "max_order_key",
    "primary_key",
    "schema",
    "source_tables",
    "table_info",
]


@dataclass(frozen=True, slots=True)
class TableInfo:
    """One Delta table of the lake as ``binlake lake show`` lists it."""

    name: str
    """``changelog``, ``quarantine``, or the source table a mirror/tombstones/history table belongs to."""
    kind: str
    uri: str
    version: int
    rows: int
    last_commit: datetime | None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SourceTableDirs:
    """The per-source-table tables that share one directory name."""

    source_table: str
    dir: str
    mirror: str | None = None
    tombstones: str | None = None
    history: str | None = None

    def uri(self, kind: str) -> str | None:
        return {"mirror": self.mirror, "tombstones": self.tombstones, "history": self.history}[kind]


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
    found: dict[str, SourceTableDirs] = {}
    for kind, folder in KINDS:
        base = f"{settings.lake()}/{folder}"
        for name in _hadoop_subdirs(spark, base):
            uri = f"{base}/{name}"
            if not delta.exists(spark, uri):
                continue  # a folder Delta never committed to (or foreign files): not a table
            entry = found.setdefault(name, SourceTableDirs(source_table=name, dir=name))
            setattr(entry, kind, uri)
    for entry in found.values():
        # The mirror's property names the table; tombstones/history may carry it too when alone.
        for table_uri in (entry.mirror, entry.history, entry.tombstones):
            if table_uri is not None:
                named = delta.properties(spark, table_uri).get(PROP_SOURCE)
                if named:
                    entry.source_table = named
                    break
    return sorted(found.values(), key=lambda e: e.source_table)


def find_source_table(spark: SparkSession, settings: SinkSettings, table: str) -> SourceTableDirs | None:
    """The tables of source table ``table`` (by property, else by directory name), or None."""
    entries = source_tables(spark, settings)
    for entry in entries:
        if entry.source_table == table:
            return entry
    wanted = table_dir(table)
    return next((entry for entry in entries if entry.dir == wanted), None)


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


def primary_key(properties: dict[str, str]) -> list[str]:
    key: list[str] = json.loads(properties.get(PROP_KEY, "[]"))
    return key


def fallbacks(properties: dict[str, str]) -> dict[str, str]:
    value: dict[str, str] = json.loads(properties.get(PROP_FALLBACKS, "{}"))
    return value


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
