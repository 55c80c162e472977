"""The lake for SQL users: temporary views that decode the changelog's Avro bodies.

A version-2 changelog (``spark_sink.events.rows``) keeps each event's images only
in ``event_avro``, the event's bytes as the unified topic holds them. Any Delta
reader sees the envelope columns (op, source table, order_key, times, origin,
Kafka coordinates); a Spark session with the sink's packages and jar (``spark.jars``:
``binlake.spark_sink.jvm.JAR``, the event decoder) sees every field:

    from binlake.spark_sink.lake import sql as lake_sql
    lake_sql.register(spark, "s3a://bucket/lake")
    spark.sql("SELECT order_key, after['amount'] FROM binlake_changelog WHERE op = 'UPDATE'")

``binlake_changelog`` has the columns of a version-1 changelog: the envelope
plus ``columns``, ``before``, ``after`` (maps from column name to the value
union, one member set per value: ``member_long``, ``member_Decimal.digits``...)
and ``changed_columns``. A column absent from an image is absent from the map
(``map_contains_key`` is false); a column present with SQL NULL maps to a
struct whose members are all NULL.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession

from binlake.spark_sink.events import decoder
from binlake.spark_sink.events.rows import expand

CHANGELOG_VIEW = "binlake_changelog"


def changelog_events(spark: SparkSession, lake_uri: str) -> DataFrame:
    """The changelog at ``<lake_uri>/changelog`` with every event field decoded (either layout version)."""
    return expand(spark.read.format("delta").load(f"{lake_uri.rstrip('/')}/changelog"))


def register(spark: SparkSession, lake_uri: str) -> list[str]:
    """Create (or replace) the lake's temporary views in ``spark``, registering the event decoder (SQL function
    ``binlake_decode_event``) they use; return their names."""
    decoder.register(spark)
    changelog_events(spark, lake_uri).createOrReplaceTempView(CHANGELOG_VIEW)
    return [CHANGELOG_VIEW]
