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

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from spark_sink.source import EVENT, KAFKA_COLUMNS, REASON

COORDINATES: Final = ["_kafka_topic", "_kafka_partition", "_kafka_offset"]


def source_table(event: Column) -> Column:
    """``[tenant.]database.[schema.]table`` of an event; ``_none`` when the event names nothing."""
    source = event["source"]
    name = F.concat_ws(".", source["tenant"], source["database"], source["schema"], source["table"])
    return F.when(name == "", F.lit("_none")).otherwise(name)


def changelog_rows(decoded: DataFrame) -> DataFrame:
    """The good records of a decoded batch as changelog rows."""
    event = F.col(EVENT)
    good = decoded.where(F.col(REASON).isNull())
    event_date = F.coalesce(F.to_date(F.timestamp_millis(event["ts_ms"])), F.to_date("_kafka_timestamp"))
    return good.select(
        *KAFKA_COLUMNS,
        f"{EVENT}.*",
        source_table(event).alias("source_table"),
        event_date.alias("event_date"),
    )


def quarantine_rows(decoded: DataFrame) -> DataFrame:
    return decoded.where(F.col(REASON).isNotNull()).select(
        *KAFKA_COLUMNS, "key", "value", F.col(REASON).alias("reason")
    )


def not_yet_written(rows: DataFrame, written: DataFrame | None, prune: dict[str, list[object]]) -> DataFrame:
    """``rows`` whose Kafka coordinates ``written`` does not hold (``prune``: partition values to read)."""
    if written is None:
        return rows
    for column, values in prune.items():
        written = written.where(F.col(column).isin(values)) if values else written.limit(0)
    return rows.join(written.select(*COORDINATES), on=COORDINATES, how="left_anti")
