"""The changelog (bronze) and quarantine tables.

Changelog: one row per canonical event: its Kafka coordinates, every envelope
field of the event as ``from_avro`` yields it (``source``, ``columns``,
``origin``... as structs) and its images as ``map<string, struct>`` of the value
union's branches (stable identifiers ``member_long``, ``member_Decimal``...),
plus ``source_table`` and ``event_date`` (the UTC date of ``ts_ms``, else of the
Kafka timestamp), its partition columns by default.

Quarantine: every message that is not a readable canonical event (unknown
fingerprint, no single-object marker, corrupt body, tombstone), verbatim, with
the reason.

Both are appended exactly once per micro-batch (Delta txnAppId/txnVersion), and
a micro-batch writes only the records neither table holds yet (by Kafka topic,
partition and offset, read at the table version pinned when the batch started),
so replaying a topic range under a new checkpoint adds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from spark_sink import delta_tables
from spark_sink.source import EVENT, KAFKA_COLUMNS, KAFKA_SCHEMA, REASON, decode

COORDINATES: Final = ["_kafka_topic", "_kafka_partition", "_kafka_offset"]


def source_table(event: Column) -> Column:
    """``[tenant.]database.[schema.]table`` of an event; ``_none`` when the event names nothing."""
    source = event["source"]
    name = F.concat_ws(".", source["tenant"], source["database"], source["schema"], source["table"])
    return F.when(name == "", F.lit("_none")).otherwise(name)


def _with_reason(decoded: DataFrame) -> DataFrame:
    """Changelog columns of every decoded record, and its ``_reason`` (NULL for a good one)."""
    event = F.col(EVENT)
    event_date = F.coalesce(F.to_date(F.timestamp_millis(event["ts_ms"])), F.to_date("_kafka_timestamp"))
    return decoded.select(
        *KAFKA_COLUMNS,
        f"{EVENT}.*",
        source_table(event).alias("source_table"),
        event_date.alias("event_date"),
        REASON,
    )


def changelog_rows(decoded: DataFrame) -> DataFrame:
    """The good records of a decoded batch as changelog rows."""
    return _with_reason(decoded).where(F.col(REASON).isNull()).drop(REASON)


def ensure_table(spark: SparkSession, uri: str, partition_by: list[str]) -> None:
    """Create the changelog empty if it does not exist yet: the mirror query streams from it from the start.

    Its schema is what the first micro-batch would append (``changelog_rows`` of decoded Kafka rows).
    """
    if delta_tables.exists(spark, uri):
        return
    empty = changelog_rows(decode(spark.createDataFrame([], KAFKA_SCHEMA)))
    empty.write.format("delta").mode("append").partitionBy(*partition_by).save(uri)


def quarantine_rows(decoded: DataFrame) -> DataFrame:
    return decoded.where(F.col(REASON).isNotNull()).select(
        *KAFKA_COLUMNS, "key", "value", F.col(REASON).alias("reason")
    )


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """The Kafka offsets of one topic partition in a micro-batch (inclusive)."""

    topic: str
    partition: int
    first: int
    last: int


@dataclass(frozen=True, slots=True)
class Extent:
    """Where a micro-batch's records are: Kafka offsets, and the changelog partitions of its good ones."""

    ranges: list[OffsetRange]
    partitions: dict[str, list[object]]
    """Changelog partition column -> the values the batch's good records have (for partition pruning)."""
    bad: int
    """Records that are not readable events (quarantined, unless a replay finds them written)."""


def extent(decoded: DataFrame, partition_by: list[str]) -> Extent:
    """The batch's ``Extent``, in one small job (a handful of rows to the driver)."""
    good = F.when(F.col(REASON).isNull(), F.struct(*[F.col(c) for c in partition_by]))
    found = (
        _with_reason(decoded)
        .groupBy("_kafka_topic", "_kafka_partition")
        .agg(
            F.min("_kafka_offset").alias("first"),
            F.max("_kafka_offset").alias("last"),
            F.collect_set(good).alias("partitions"),
            F.count(REASON).alias("bad"),
        )
        .collect()
    )
    ranges = [
        OffsetRange(r["_kafka_topic"], int(r["_kafka_partition"]), int(r["first"]), int(r["last"])) for r in found
    ]
    values = {c: sorted({p[i] for r in found for p in r["partitions"]}) for i, c in enumerate(partition_by)}
    return Extent(ranges, values, sum(int(r["bad"]) for r in found))


def in_ranges(ranges: list[OffsetRange]) -> Column:
    """Rows inside any of ``ranges``: Delta skips the files whose offset statistics lie outside them."""
    condition = F.lit(False)
    for r in ranges:
        condition = condition | (
            (F.col("_kafka_topic") == r.topic)
            & (F.col("_kafka_partition") == r.partition)
            & F.col("_kafka_offset").between(r.first, r.last)
        )
    return condition


def not_yet_written(
    rows: DataFrame, written: DataFrame | None, prune: dict[str, list[object]], ranges: list[OffsetRange]
) -> DataFrame:
    """``rows`` whose Kafka coordinates ``written`` does not hold.

    ``prune`` (partition values) and ``ranges`` (the batch's offsets) restrict what is read of ``written``:
    its partition pruning and Delta's per-file offset statistics leave only the files a replay of
    this range would have written, usually none, so the check costs O(batch), not O(changelog).
    """
    if written is None:
        return rows
    for column, values in prune.items():
        written = written.where(F.col(column).isin(values)) if values else written.limit(0)
    seen = written.where(in_ranges(ranges)).select(*COORDINATES)
    return rows.join(F.broadcast(seen), on=COORDINATES, how="left_anti")
