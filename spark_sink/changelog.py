"""The changelog (bronze) and quarantine tables.

Changelog: one row per canonical event. Version 2 (new lakes): its Kafka
coordinates, the event's *envelope* as columns (``op``, ``source`` struct,
``order_key``, ``ts_ms``, ``ingest_ts_ms``, ``primary_key``, ``ddl``,
``origin``), ``source_table`` and ``event_date`` (the UTC date of ``ts_ms``,
else of the Kafka timestamp: its partition columns by default), the Kafka
``key`` (the row's identity: table and key values, as JSON) and
``event_avro``: the event exactly as the topic holds it (Avro single-object
encoding), from which ``columns``, ``before``, ``after`` and
``changed_columns`` are decoded where needed (``expand``; the mirror query,
and the SQL function ``binlake_event`` for users, ``lake_sql``). Every value
kind stays exact and an absent column stays absent: the bytes are the
normalizer's own. Writing the images as columns cost about 300 Parquet leaves
per row and most of a batch's time; the body is one binary column.

Version 1 (lakes made by earlier releases, table property
``binlake.changelog_version`` absent) holds every event field decoded
(images as ``map<string, struct>`` of the value union's branches); the sink
keeps appending version-1 rows to such a table, and ``expand`` passes them
through, so both versions feed the same mirror code.

Quarantine: every message that is not a readable canonical event (unknown
fingerprint, no single-object marker, corrupt body, tombstone), verbatim, with
the reason.

Both are appended exactly once per micro-batch (Delta txnAppId/txnVersion), and
a micro-batch writes only the records neither table holds yet (by Kafka topic,
partition and offset, read at the table version pinned when the batch started),
so replaying a topic range under a new checkpoint adds nothing. That read is
skipped where the query has proven the changelog holds nothing yet (``Frontier``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructField, StructType

from spark_sink import batch_stats, delta_tables
from spark_sink.batch_stats import BatchStats
from spark_sink.local_files import local_root
from spark_sink.offset_log import OffsetRange
from spark_sink.source import EVENT, IMAGE_FIELDS, KAFKA_COLUMNS, KAFKA_SCHEMA, REASON, decode, decoded_event

COORDINATES: Final = ["_kafka_topic", "_kafka_partition", "_kafka_offset"]
BAD: Final = "bad"
"""An observed metric of ``changelog_rows``: unreadable records in the batch."""
RECORDS: Final = "records"
"""An observed metric of ``changelog_rows``: every record in the batch."""


def source_table(event: Column) -> Column:
    """``[tenant.]database.[schema.]table`` of an event; ``_none`` when the event names nothing."""
    source = event["source"]
    name = F.concat_ws(".", source["tenant"], source["database"], source["schema"], source["table"])
    return F.when(name == "", F.lit("_none")).otherwise(name)


VERSION: Final = 2
"""The changelog layout new lakes get (see the module doc)."""
PROP_VERSION: Final = "binlake.changelog_version"
BODY: Final = "event_avro"
"""Version 2: the event's Avro single-object bytes, as on the topic."""
CHANGE_FEED: Final = "delta.enableChangeDataFeed"
"""On: Delta records which rows each version added (appends cost nothing more); the current-state reads
(``current_state``) read the changelog's tail by it."""
PROP_FEED_FROM: Final = "binlake.change_feed_from"
"""The first version of a changelog whose feed was enabled after its creation (absent: version 0)."""
STATS_COLUMNS: Final = "delta.dataSkippingStatsColumns"
STATS: Final = ("_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp", "order_key", "ts_ms")
"""The columns a new changelog keeps per-file statistics of: the Kafka coordinates (the "not yet written"
read skips files by them), the order and the event time. Statistics of every column cost about a
fifth of an append."""
_ENVELOPE: Final = ("op", "source", "order_key", "ts_ms", "ingest_ts_ms", "primary_key", "ddl", "origin")


def _with_reason(decoded: DataFrame, version: int = VERSION) -> DataFrame:
    """Changelog columns of every decoded record, and its ``_reason`` (NULL for a good one)."""
    event = F.col(EVENT)
    event_date = F.coalesce(F.to_date(F.timestamp_millis(event["ts_ms"])), F.to_date("_kafka_timestamp"))
    fields = [F.col(f"{EVENT}.*")]
    tail: list[Column] = []
    if version != 1:  # the envelope as columns; the images only in the body
        fields = [event[name].alias(name) for name in _ENVELOPE]
        tail = [F.col("key").cast("string").alias("key"), F.col("value").alias(BODY)]
    return decoded.select(
        *KAFKA_COLUMNS,
        *fields,
        source_table(event).alias("source_table"),
        event_date.alias("event_date"),
        *tail,
        REASON,
    )


def changelog_rows(decoded: DataFrame, version: int = VERSION, *, observed: Observation | None = None) -> DataFrame:
    """The good records of a decoded batch as changelog rows of ``version``.

    Version 2 needs only the envelope decoded (``decode(..., envelope=True)``); version 1 every field.
    ``observed`` counts the batch's records and its unreadable ones (metrics ``records``, ``bad``) while the
    rows are computed: the append learns whether anything needs quarantining without a pass of its own.
    """
    rows = _with_reason(decoded, version)
    if observed is not None:
        rows = rows.observe(observed, F.count(REASON).alias(BAD), F.count(F.lit(1)).alias(RECORDS))
    return rows.where(F.col(REASON).isNull()).drop(REASON)


def batch_commit(
    spark: SparkSession, uri: str, *, after: int, app_id: str, batch_id: int
) -> list[dict[str, Any]] | None:
    """The actions of the commit a batch made (transaction app id and version) after version ``after``;
    None when there is none (Delta skipped the batch's write: it had committed it before)."""
    latest = delta_tables.current_version(spark, uri)
    for version in range(after + 1, (latest if latest is not None else after) + 1):
        actions = delta_tables.commit_actions(spark, uri, version)
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
    files = None if commit is None else delta_tables.added_files(uri, commit)
    if files is None:
        return spark.read.format("delta").load(uri).where(in_ranges(ranges))
    schema = delta_tables.schema(spark, uri)
    if not files:
        return spark.createDataFrame([], schema)
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
    found = delta_tables.added(actions)
    if found is None or any("source_table" in values and values["source_table"] is None for _, values in found):
        return None
    return [(root / path, values.get("source_table")) for path, values in found]


def change_feed_from(properties: dict[str, str]) -> int | None:
    """The first changelog version its change data feed holds (None: no feed), from its table properties."""
    if properties.get(CHANGE_FEED, "false").lower() != "true":
        return None
    return int(properties.get(PROP_FEED_FROM, "0"))


def ensure_table(spark: SparkSession, uri: str, partition_by: list[str]) -> int:
    """Create the changelog empty (version ``VERSION``) if it does not exist yet; return its version.

    The mirror query streams from it from the start. Its schema is what the first micro-batch would
    append (``changelog_rows`` of decoded Kafka rows). A changelog without a change data feed (an earlier
    release's) gets one from its next version on (``current_state`` reads its tail by it).
    """
    found = delta_tables.state(spark, uri)
    if found is not None:
        if change_feed_from(found.properties) is None:
            # One commit, the property that says from where: the sink is the changelog's only writer.
            feed = {CHANGE_FEED: "true", PROP_FEED_FROM: str(found.version + 1)}
            delta_tables.set_properties(spark, uri, feed)
        return int(found.properties.get(PROP_VERSION, "1"))
    empty = changelog_rows(decode(spark.createDataFrame([], KAFKA_SCHEMA), envelope=True))
    # One commit with its version property: a crash cannot leave a table that reads as version 1.
    schema = StructType([StructField(f.name, f.dataType) for f in empty.schema.fields])
    properties = {PROP_VERSION: str(VERSION), STATS_COLUMNS: ",".join(STATS), CHANGE_FEED: "true"}
    delta_tables.create(spark, uri, schema, partition_by=partition_by, properties=properties)
    return VERSION


def mirror_fields(*, descriptors_vary: bool) -> frozenset[str]:
    """What a mirror reads of an event's body (``expand``): its images, and its column descriptors only
    where they vary among a batch's events of one table (the descriptor id hashes them)."""
    return frozenset({"before", "after", "columns"} if descriptors_vary else {"before", "after"})


_DECODED: Final = "_decoded"


def expand(rows: DataFrame, fields: frozenset[str] = IMAGE_FIELDS) -> DataFrame:
    """Changelog rows with the event's ``fields`` as columns, whatever their version (the mirror's input).

    Version 2 rows get them (of ``columns``, ``before``, ``after``, ``changed_columns``) decoded from
    ``event_avro`` (one ``from_avro`` pass; the others are skipped, not built: the descriptors are
    a quarter of the decoding's cost); version-1 rows have them all already. ``after`` needs
    ``before`` (the image's value types are defined where the schema first names them).
    """
    if BODY not in rows.columns:
        return rows
    assert fields <= IMAGE_FIELDS and ("after" not in fields or "before" in fields), fields
    decoded = decoded_event(BODY, only=None if fields == IMAGE_FIELDS else fields)
    kept = [c for c in rows.columns if c not in (BODY, "key")]
    # The body decoded into a column of its own, then its fields picked: Spark does not merge the two
    # projections (that would repeat an expensive expression), so each body is decoded once. Picking the
    # fields straight from the expression decoded it once per field: the version CASE around
    # ``from_avro`` keeps Spark's common-subexpression elimination from sharing it (measured: twice the cost).
    images = [F.col(f"{_DECODED}.{name}").alias(name) for name in sorted(fields)]
    return rows.select(*kept, decoded.alias(_DECODED)).select(*kept, *images)


def quarantine_rows(decoded: DataFrame) -> DataFrame:
    return decoded.where(F.col(REASON).isNotNull()).select(
        *KAFKA_COLUMNS, "key", "value", F.col(REASON).alias("reason")
    )


def offset_ranges(raw: DataFrame) -> list[OffsetRange]:
    """The first and last offset of each topic partition in a batch of Kafka records: one small job over the
    records' coordinates (nothing decoded)."""
    found = raw.groupBy("topic", "partition").agg(F.min("offset"), F.max("offset")).collect()
    return [OffsetRange(row[0], int(row[1]), int(row[2]), int(row[3])) for row in found]


def in_ranges(ranges: list[OffsetRange], *, to_end: bool = False) -> Column:
    """Rows inside any of ``ranges`` (``to_end``: at or after a range's first offset, whatever its last):
    Delta skips the files whose offset statistics lie outside them."""
    condition = F.lit(False)
    for r in ranges:
        offset = F.col("_kafka_offset")
        within = offset >= r.first if to_end or r.last is None else offset.between(r.first, r.last)
        condition = condition | (
            (F.col("_kafka_topic") == r.topic) & (F.col("_kafka_partition") == r.partition) & within
        )
    return condition


def written_in(written: DataFrame, ranges: list[OffsetRange]) -> DataFrame:
    """The Kafka coordinates ``written`` holds within ``ranges`` (a replayed batch's records, usually none).

    Delta's per-file offset statistics leave only the files a replay of this range would have written,
    so the check costs O(batch), not O(changelog).
    """
    return written.where(in_ranges(ranges)).select(*COORDINATES)


class Frontier:
    """Per Kafka topic partition, an offset from which the changelog is known to hold no record but the
    ones this query appended: a batch reading only from there on needs no "already written?" read.

    A query starts knowing nothing (a new checkpoint may replay a range the changelog holds), so its
    first batch of each partition asks the changelog whether it holds anything at or after the batch's
    first offset (``held_from``). If nothing, the query itself is the only writer of every later offset
    of that partition, and a batch replayed after a failure has the same id and offsets, so Delta's
    transaction id already skips what it committed: the partition is proven from that offset on.
    """

    def __init__(self) -> None:
        self._clean_from: dict[tuple[str, int], int] = {}

    def unproven(self, ranges: list[OffsetRange]) -> list[OffsetRange]:
        """The ranges that might hold records the changelog already has."""
        return [r for r in ranges if self._clean_from.get((r.topic, r.partition), r.first + 1) > r.first]

    def prove(self, topic: str, partition: int, first: int) -> None:
        """The changelog holds no record of ``topic``/``partition`` at or after ``first``."""
        known = self._clean_from.get((topic, partition))
        self._clean_from[(topic, partition)] = first if known is None else min(known, first)


def held_from(written: DataFrame, ranges: list[OffsetRange]) -> dict[tuple[str, int], int]:
    """Per topic partition of ``ranges``, the smallest offset ``written`` holds at or after the range's
    first offset (partitions holding none are absent). Delta's per-file offset statistics skip the files
    that end before it, so on a live lake this reads next to nothing."""
    held = written.where(in_ranges(ranges, to_end=True)).groupBy("_kafka_topic", "_kafka_partition")
    found = held.agg(F.min("_kafka_offset")).collect()
    return {(row[0], int(row[1])): int(row[2]) for row in found}


def overlaps(held: dict[tuple[str, int], int], ranges: list[OffsetRange]) -> bool:
    """Whether a partition's first held offset (``held_from``) lies within its range: the batch holds records
    the changelog has (an open range: any held offset does)."""
    for r in ranges:
        at = held.get((r.topic, r.partition))
        if at is not None and (r.last is None or at <= r.last):
            return True
    return False


def not_yet_written(rows: DataFrame, seen: DataFrame | None) -> DataFrame:
    """``rows`` whose Kafka coordinates are not in ``seen`` (``written_in``; None: nothing written)."""
    if seen is None:
        return rows
    return rows.join(F.broadcast(seen), on=COORDINATES, how="left_anti")
