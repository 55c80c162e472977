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

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from delta.tables import DeltaTable
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import DataType, StructType

TXN_APP_ID: Final = "spark.databricks.delta.write.txnAppId"
TXN_VERSION: Final = "spark.databricks.delta.write.txnVersion"


def quote(name: str) -> str:
    """A column or path identifier in backticks."""
    return "`" + name.replace("`", "``") + "`"


def ref(uri: str) -> str:
    """The SQL name of the Delta table at ``uri``."""
    return f"delta.{quote(uri)}"


def exists(spark: SparkSession, uri: str) -> bool:
    return DeltaTable.isDeltaTable(spark, uri)


def current_version(spark: SparkSession, uri: str) -> int | None:
    if not exists(spark, uri):
        return None
    row = DeltaTable.forPath(spark, uri).history(1).select("version").first()
    return None if row is None else int(row[0])


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
    sql = f"CREATE TABLE IF NOT EXISTS {ref(uri)} ({columns}) USING delta"
    if partition_by:
        sql += f" PARTITIONED BY ({', '.join(quote(c) for c in partition_by)})"
    if properties:
        sql += f" TBLPROPERTIES ({_properties_sql(properties)})"
    spark.sql(sql)


def _properties_sql(values: dict[str, str]) -> str:
    return ", ".join(f"'{key}' = '{value.replace(chr(39), chr(39) * 2)}'" for key, value in values.items())


def schema(spark: SparkSession, uri: str) -> StructType:
    return DeltaTable.forPath(spark, uri).toDF().schema


def properties(spark: SparkSession, uri: str) -> dict[str, str]:
    row = DeltaTable.forPath(spark, uri).detail().select("properties").first()
    return {} if row is None else dict(row[0])


def add_columns(spark: SparkSession, uri: str, columns: list[tuple[str, DataType]]) -> None:
    if columns:
        spec = ", ".join(f"{quote(name)} {data_type.simpleString()}" for name, data_type in columns)
        spark.sql(f"ALTER TABLE {ref(uri)} ADD COLUMNS ({spec})")


def change_type(spark: SparkSession, uri: str, column: str, data_type: DataType) -> None:
    spark.sql(f"ALTER TABLE {ref(uri)} ALTER COLUMN {quote(column)} TYPE {data_type.simpleString()}")


def set_properties(spark: SparkSession, uri: str, values: dict[str, str]) -> None:
    spark.sql(f"ALTER TABLE {ref(uri)} SET TBLPROPERTIES ({_properties_sql(values)})")


def append(frame: DataFrame, uri: str, app_id: str, version: int, *, partition_by: list[str] | None = None) -> None:
    """Append exactly once: Delta skips the write if the table already has (app_id, version)."""
    writer = frame.write.format("delta").mode("append").option("txnAppId", app_id).option("txnVersion", str(version))
    if partition_by:
        writer = writer.partitionBy(*partition_by)
    writer.save(uri)


@contextmanager
def idempotent_dml(spark: SparkSession, app_id: str, version: int) -> Iterator[None]:
    """MERGE/UPDATE/DELETE inside commit under (app_id, version), or not at all if already committed."""
    spark.conf.set(TXN_APP_ID, app_id)
    spark.conf.set(TXN_VERSION, str(version))
    try:
        yield
    finally:
        spark.conf.unset(TXN_APP_ID)
        spark.conf.unset(TXN_VERSION)
