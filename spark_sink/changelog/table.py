"""The changelog (bronze) and quarantine tables: their creation, and the rows a batch appended.

Changelog: one row per canonical event (``spark_sink.events.rows``: what a
row holds, in version 2 and in version 1, which earlier releases made).

Quarantine: every message that is not a readable canonical event (unknown
fingerprint, no single-object marker, corrupt body, tombstone), verbatim, with
the reason.

Both are appended exactly once per micro-batch (Delta txnAppId/txnVersion), and
a micro-batch writes only the records neither table holds yet (by Kafka topic,
partition and offset, read at the table version pinned when the batch started),
so replaying a topic range under a new checkpoint adds nothing (``dedup``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from binlake.spark_sink import delta
from binlake.spark_sink.changelog.dedup import in_ranges
from binlake.spark_sink.checkpoint.offset_log import OffsetRange
from binlake.spark_sink.events.rows import changelog_rows
from binlake.spark_sink.events.source import KAFKA_COLUMNS, KAFKA_SCHEMA, REASON, decode
from binlake.spark_sink.layout import CHANGE_FEED, CHANGELOG_VERSION, PROP_FEED_FROM, PROP_VERSION, STATS, STATS_COLUMNS
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.observe import batch_stats
from binlake.spark_sink.observe.batch_stats import BatchStats


def batch_commit(
    spark: SparkSession, uri: str, *, after: int, app_id: str, batch_id: int
) -> list[dict[str, Any]] | None:
    """The actions of the commit a batch made (transaction app id and version) after version ``after``;
    None when there is none (Delta skipped the batch's write: it had committed it before)."""
    latest = delta.current_version(spark, uri)
    for version in range(after + 1, (latest if latest is not None else after) + 1):
        actions = delta.commit_actions(spark, uri, version)
        txn = next((a["txn"] for a in actions if "txn" in a), None)
        if txn is not None and txn.get("appId") == app_id and txn.get("version") == batch_id:
            return actions
    return None


def appended(
    spark: SparkSession, uri: str, commit: list[dict[str, Any]] | None, ranges: list[OffsetRange]
) -> DataFrame:
    """The rows a batch appended, where the changelog held none of them before: those of its ``commit``
    (``batch_commit``), read straight from the files it added. A read of the table as of the new version
    would first rebuild the table's state, about a second per batch. Without the commit (a replay whose
    write was skipped; a file outside the table's folder), the rows of ``ranges`` at the latest version
    (Delta's offset statistics skip the other files)."""
    files = None if commit is None else delta.added_files(uri, commit)
    if files is None:
        return spark.read.format("delta").load(uri).where(in_ranges(ranges))
    schema = delta.schema(spark, uri)
    if not files:
        return delta.empty(spark, schema)
    # The table's schema types the partition columns as the table does (no type inference from paths).
    return spark.read.schema(schema).option("basePath", uri).parquet(*files)


def appended_stats(
    spark: SparkSession, uri: str, commit: list[dict[str, Any]] | None, ranges: list[OffsetRange]
) -> BatchStats:
    """The statistics (``batch_stats``) of the rows a batch appended (``appended``): read by DuckDB in the
    driver from the files of its ``commit`` where the lake is on this machine, else by a Spark job."""
    root = local_root(uri)
    files = None if commit is None or root is None else _local_files(root, commit)
    found = None if files is None else batch_stats.collect_local(files)
    return found if found is not None else batch_stats.collect(appended(spark, uri, commit, ranges))


def _local_files(root: Path, actions: list[dict[str, Any]]) -> list[tuple[Path, str | None]] | None:
    """The files a commit added under ``root``, each with its ``source_table`` partition value (None: not a
    partition column); None if one lies elsewhere or has a null table (which only other writers make)."""
    found = delta.added(actions)
    if found is None or any("source_table" in values and values["source_table"] is None for _, values in found):
        return None
    return [(root / path, values.get("source_table")) for path, values in found]


def change_feed_from(properties: dict[str, str]) -> int | None:
    """The first changelog version its change data feed holds (None: no feed), from its table properties."""
    if properties.get(CHANGE_FEED, "false").lower() != "true":
        return None
    return int(properties.get(PROP_FEED_FROM, "0"))


def inserted_between(spark: SparkSession, uri: str, first: int, last: int, *, with_version: bool = False) -> DataFrame:
    """The rows the changelog's versions ``first`` to ``last`` appended, read from its change data feed (the
    changelog is append-only: every change is an insert), with the feed's own columns left out (but
    ``_commit_version``, each row's version, with ``with_version``)."""
    feed = (
        spark.read.format("delta")
        .option("readChangeFeed", "true")
        .option("startingVersion", str(first))
        .option("endingVersion", str(last))
        .load(uri)
    )
    dropped = (
        ("_change_type", "_commit_timestamp")
        if with_version
        else ("_change_type", "_commit_version", "_commit_timestamp")
    )
    return feed.where(F.col("_change_type") == "insert").drop(*dropped)


def ensure_table(spark: SparkSession, uri: str, partition_by: list[str]) -> int:
    """Create the changelog empty (version ``CHANGELOG_VERSION``) if it does not exist yet; return its version.

    The mirror query streams from it from the start. Its schema is what the first micro-batch would
    append (``changelog_rows`` of decoded Kafka rows). A changelog without a change data feed (an earlier
    release's) gets one from its next version on (``current_state`` reads its tail by it).
    """
    found = delta.state(spark, uri)
    if found is not None:
        if change_feed_from(found.properties) is None:
            # One commit, the property that says from where: the sink is the changelog's only writer.
            feed = {CHANGE_FEED: "true", PROP_FEED_FROM: str(found.version + 1)}
            delta.set_properties(spark, uri, feed)
        return int(found.properties.get(PROP_VERSION, "1"))
    empty = changelog_rows(decode(spark.createDataFrame([], KAFKA_SCHEMA), envelope=True))
    # One commit with its version property: a crash cannot leave a table that reads as version 1.
    schema = StructType([StructField(f.name, f.dataType) for f in empty.schema.fields])
    properties = {PROP_VERSION: str(CHANGELOG_VERSION), STATS_COLUMNS: ",".join(STATS), CHANGE_FEED: "true"}
    delta.create(spark, uri, schema, partition_by=partition_by, properties=properties)
    return CHANGELOG_VERSION


def quarantine_rows(decoded: DataFrame) -> DataFrame:
    return decoded.where(F.col(REASON).isNotNull()).select(
        *KAFKA_COLUMNS, "key", "value", F.col(REASON).alias("reason")
    )
