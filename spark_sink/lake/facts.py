"""The numbers ``binlake lake verify`` compares, read with Spark from the unified topic and the lake.

The topic is read in batch mode, from the earliest to the latest offset, with
``kafka.isolation.level=read_committed`` (the sink's own Kafka options, so only
committed normalizer transactions count) and decoded exactly as the sink
decodes it (``spark_sink.events.source.decode``): a record is an event of the topic
if and only if the sink would have written it to the changelog. Everything is
aggregated in Spark; only a few numbers per source table reach the driver. The
mirrors' own facts (rows, newest sequence, properties) come from their Delta
logs and a DuckDB scan (``lake.native``) where the lake is on this machine:
Spark's few jobs per table cost seconds each, on a lake of many tables minutes.
Before Spark starts reading, a plain Kafka client checks that the broker
answers and has the topic, and notes each partition's first offset.

The expected state of a keyed mirror is a fold of the topic's row events per
key, with the key columns the mirror was created with (``binlake.primary_key``):
the key's values are read from the ``after`` image (``before`` for a DELETE);
an UPDATE whose ``before`` key differs from its ``after`` key also ends the old
key; a key is live when its newest event (by sequence: ``order_key``, then
origin, as the sink orders them, ``spark_sink.events.order``) is not a DELETE
and, for a mirror that records TRUNCATEs, is newer than the last TRUNCATE.
Keys with a missing or NULL key value are skipped, as the sink skips them.

Verify a quiet lake: records the sink has not processed yet count as missing.
The topic must still hold every record the lake was built from (no retention
or compaction has removed any), or the lake will look larger than the topic.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.errors import KafkaError
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.event.model import ROW_OPS
from binlake.shared.kafka.client import connection_kwargs
from binlake.spark_sink import delta
from binlake.spark_sink.events.order import origin_sql, sequence
from binlake.spark_sink.events.rows import changelog_rows
from binlake.spark_sink.events.source import REASON, decode, kafka_options
from binlake.spark_sink.lake import entries
from binlake.spark_sink.lake import tables as lake_tables
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.lake.tables import LakeError, SourceTableDirs
from binlake.spark_sink.lake.verify import (
    ChangelogTable,
    ExpectedMirror,
    LakeFacts,
    MirrorTable,
    TableFacts,
    TopicTable,
)
from binlake.spark_sink.layout import COORDINATES, EMPTYING_DDL, IS_CURRENT, ORDER_KEY, PROP_TRUNCATED, TOMBSTONE_TABLE
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.settings import SinkSettings

_ROW_OPS: Final = sorted(ROW_OPS)
_KEY: Final = "_key"
_DELETE: Final = "_is_delete"
_ORIGIN: Final = "_origin"


async def _log_start_offsets(kafka: KafkaSettings, topic: str) -> dict[int, int]:
    consumer = AIOKafkaConsumer(**connection_kwargs(kafka), request_timeout_ms=20_000)
    try:
        await consumer.start()
    except KafkaError as exc:
        await consumer.stop()
        raise LakeError(
            f"cannot reach Kafka at {kafka.bootstrap_servers} ({exc}): check --bootstrap-servers and BINLAKE_KAFKA_*"
        ) from None
    try:
        if topic not in await consumer.topics():
            raise LakeError(
                f"Kafka at {kafka.bootstrap_servers} has no topic {topic}: check --topic (BINLAKE_SINK_TOPIC)"
            )
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        starts = await consumer.beginning_offsets(partitions)
        return {tp.partition: offset for tp, offset in starts.items()}
    finally:
        await consumer.stop()


def topic_start_offsets(kafka: KafkaSettings, topic: str) -> dict[int, int]:
    """Each partition's first offset, checked before Spark reads the topic: a wrong broker address or topic
    name fails here in seconds with a clear message (Spark's Kafka source would retry for minutes)."""
    return asyncio.run(_log_start_offsets(kafka, topic))


def read_topic(spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings) -> DataFrame:
    """The whole topic as it is now (earliest to latest offsets, committed records only), decoded."""
    raw = (
        spark.read.format("kafka")
        .options(**kafka_options(kafka))
        .option("subscribe", settings.topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    return decode(raw)


def _topic_tables(events: DataFrame) -> dict[str, TopicTable]:
    is_row = F.col("op").isin(_ROW_OPS)
    is_truncate = (F.col("op") == "TRUNCATE") | ((F.col("op") == "DDL") & F.col("ddl.kind").isin(sorted(EMPTYING_DDL)))
    last_truncate = F.max(F.when(is_truncate, F.col("order_key")))
    per_table = events.groupBy("source_table").agg(
        F.count(F.lit(1)).alias("events"),
        F.count_distinct(_ORIGIN).alias("origins"),
        F.count_distinct(F.when(is_row, F.col(_ORIGIN))).alias("row_events"),
        F.max(F.when(is_row, F.col("order_key"))).alias("last_order_key"),
        F.count(F.when(is_truncate, 1)).alias("truncates"),
        last_truncate.alias("last_truncate"),
    )
    after = (
        events.where(is_row)
        .join(per_table.select("source_table", "last_truncate"), on="source_table")
        .where(F.col("last_truncate").isNull() | (F.col("order_key") > F.col("last_truncate")))
        .groupBy("source_table")
        .agg(F.count_distinct(_ORIGIN).alias("after"))
    )
    rows = per_table.join(after, on="source_table", how="left").collect()
    return {
        r["source_table"]: TopicTable(
            events=int(r["events"]),
            duplicated_by_origin=int(r["events"]) - int(r["origins"]),
            row_events=int(r["row_events"]),
            last_order_key=r["last_order_key"],
            truncates=int(r["truncates"]),
            last_truncate=r["last_truncate"],
            row_events_after_truncate=int(r["after"] or 0),
        )
        for r in rows
    }


def _changelog_tables(changelog: DataFrame, events: DataFrame) -> dict[str, ChangelogTable]:
    coordinates = [*COORDINATES, "source_table"]
    counts = changelog.groupBy("source_table").agg(
        F.count(F.lit(1)).alias("rows"),
        F.count_distinct(*COORDINATES).alias("records"),
        F.max(F.when(F.col("op").isin(_ROW_OPS), F.col("order_key"))).alias("last_order_key"),
    )
    missing = events.select(*coordinates).join(changelog.select(*COORDINATES), COORDINATES, "left_anti")
    extra = changelog.select(*coordinates).join(events.select(*COORDINATES), COORDINATES, "left_anti")
    gaps: dict[str, dict[str, int]] = defaultdict(dict)
    for name, frame in (("missing", missing), ("extra", extra)):
        for row in frame.groupBy("source_table").count().collect():
            gaps[row["source_table"]][name] = int(row["count"])
    out: dict[str, ChangelogTable] = {}
    for row in counts.collect():
        table = row["source_table"]
        out[table] = ChangelogTable(
            rows=int(row["rows"]),
            records=int(row["records"]),
            missing=gaps[table].get("missing", 0),
            extra=gaps[table].get("extra", 0),
            last_order_key=row["last_order_key"],
        )
    for table, found in gaps.items():
        if table not in out:  # the changelog holds nothing of this table: every topic event is missing
            out[table] = ChangelogTable(missing=found.get("missing", 0))
    return out


def _deleted_keys(spark: SparkSession, uri: str) -> dict[str, str]:
    """Per source table, the newest ``_binlake_order_key`` of its rows in the lake's tombstone table."""
    if not delta.exists(spark, uri):
        return {}
    newest = spark.read.format("delta").load(uri).groupBy(TOMBSTONE_TABLE).agg(F.max(ORDER_KEY).alias("newest"))
    return {str(row[TOMBSTONE_TABLE]): str(row["newest"]) for row in newest.collect() if row["newest"] is not None}


def _mirror(spark: SparkSession, entry: SourceTableDirs, deleted: str | None) -> MirrorTable | None:
    """A mirror's facts; ``deleted``: the newest order key of its keys in the lake's tombstone table."""
    if entry.mirror is None:
        return None
    props = delta.properties(spark, entry.mirror)
    mirror = spark.read.format("delta").load(entry.mirror)
    newest_in_mirror = F.max(ORDER_KEY) if ORDER_KEY in mirror.columns else F.lit(None).cast("string")
    counted = mirror.agg(F.count(F.lit(1)), newest_in_mirror).first()  # one job: rows and newest sequence
    assert counted is not None
    newest = [counted[1], lake_tables.max_order_key(spark, entry.tombstones), deleted]
    known = [str(value) for value in newest if value is not None]
    history_current: int | None = None
    if entry.history is not None:
        history = spark.read.format("delta").load(entry.history)
        if IS_CURRENT in history.columns:  # a key's last version, unless that closes it (DELETE, TRUNCATE)
            history_current = history.where(F.col(IS_CURRENT)).count()
    return MirrorTable(
        key=tuple(entries.primary_key(props)),
        rows=int(counted[0]),
        last_order_key=max(known) if known else None,
        tombstones=entry.tombstones is not None or deleted is not None,
        tracks_truncates=PROP_TRUNCATED in props,
        truncated_at=props.get(PROP_TRUNCATED),
        history_current=history_current,
    )


def _mirrors(spark: SparkSession, settings: SinkSettings) -> dict[str, MirrorTable]:
    """Every source table's mirror facts: read natively from a lake on this machine (a few Spark jobs per table
    cost seconds each; the Delta log and a DuckDB scan, milliseconds), with Spark from any other."""
    if local_root(settings.lake()) is not None:
        return mirrors_native(settings)
    return mirrors_spark(spark, settings)


def mirrors_native(settings: SinkSettings) -> dict[str, MirrorTable]:
    """The mirror facts of a local lake, from the Delta logs (delta-rs) and DuckDB scans (``lake.native``)."""
    mirrors: dict[str, MirrorTable] = {}
    reader = LakeReader(settings)
    try:
        deleted = _deleted_keys_native(reader)
        for entry in reader.source_tables():
            found = _mirror_native(reader, entry, deleted.get(entry.source_table))
            if found is not None:
                mirrors[entry.source_table] = found
    finally:
        reader.close()
    return mirrors


def mirrors_spark(spark: SparkSession, settings: SinkSettings) -> dict[str, MirrorTable]:
    """The mirror facts of any lake, read with Spark (a few small jobs per table, side by side)."""
    mirrors: dict[str, MirrorTable] = {}
    entries = lake_tables.source_tables(spark, settings)
    deleted = _deleted_keys(spark, settings.tombstones_uri())
    # Each table's facts are a few small jobs and Delta log reads, mostly driver time: side by side.
    with ThreadPoolExecutor(max(1, min(settings.table_parallelism, len(entries))), "binlake-verify") as pool:
        found_all = pool.map(lambda e: _mirror(spark, e, deleted.get(e.source_table)), entries)
        for entry, found in zip(entries, found_all, strict=True):
            if found is not None:
                mirrors[entry.source_table] = found
    return mirrors


def _deleted_keys_native(reader: LakeReader) -> dict[str, str]:
    """``_deleted_keys`` with DuckDB."""
    if not reader.is_table(reader.deleted_keys()):
        return {}
    _, rows = reader.query(
        f"SELECT {TOMBSTONE_TABLE}, max({ORDER_KEY}) FROM {reader.scan(reader.deleted_keys())} GROUP BY 1"
    )
    return {str(table): str(newest) for table, newest in rows if newest is not None}


def _mirror_native(reader: LakeReader, entry: SourceTableDirs, deleted: str | None) -> MirrorTable | None:
    """``_mirror`` with the native readers (the same facts: tests/sink/test_lake_cli.py compares them)."""
    if entry.mirror is None:
        return None
    info = reader.info(entry.source_table, "mirror", entry.mirror)  # rows from the log's file statistics
    assert info is not None
    props = info.properties
    newest = [reader.max_order_key(entry.mirror), reader.max_order_key(entry.tombstones), deleted]
    known = [str(value) for value in newest if value is not None]
    return MirrorTable(
        key=tuple(entries.primary_key(props)),
        rows=info.rows,
        last_order_key=max(known) if known else None,
        tombstones=entry.tombstones is not None or deleted is not None,
        tracks_truncates=PROP_TRUNCATED in props,
        truncated_at=props.get(PROP_TRUNCATED),
        history_current=None if entry.history is None else reader.history_current(entry.history),
    )


def _key_of(image: Column, key: tuple[str, ...]) -> tuple[Column, Column]:
    """(the key as one comparable value, whether every key column has a non-NULL value)."""
    values = [image[name] for name in key]
    complete = F.lit(True)
    for value in values:
        complete = complete & value.isNotNull()
    return F.to_json(F.array(*values)), complete


def _truncate_bound(truncates: dict[str, str]) -> Column:
    """Per row, the last TRUNCATE order_key of its table (NULL: none, or not applied by the sink)."""
    bound: Column = F.lit(None).cast("string")
    for table, order_key in truncates.items():
        bound = F.when(F.col("source_table") == table, F.lit(order_key)).otherwise(bound)
    return bound


def expected_mirrors(
    events: DataFrame, keys: dict[str, tuple[str, ...]], truncates: dict[str, str]
) -> dict[str, ExpectedMirror]:
    """The live keys of each keyed table per the topic (one Spark job per distinct key column list)."""
    by_key: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for table, key in keys.items():
        by_key[key].append(table)
    out = {table: ExpectedMirror() for table in keys}
    for key, tables in sorted(by_key.items()):
        rows = events.where(F.col("op").isin(_ROW_OPS) & F.col("source_table").isin(tables))
        is_delete = F.col("op") == "DELETE"
        own_key, own_complete = _key_of(F.when(is_delete, F.col("before")).otherwise(F.col("after")), key)
        own = rows.where(own_complete).select(
            "source_table", own_key.alias(_KEY), "order_key", is_delete.alias(_DELETE)
        )
        old_key, old_complete = _key_of(F.col("before"), key)
        new_key, _ = _key_of(F.col("after"), key)
        moved = rows.where(
            (F.col("op") == "UPDATE") & F.col("before").isNotNull() & F.col("after").isNotNull() & old_complete
        ).where(~old_key.eqNullSafe(new_key))
        ended = moved.select("source_table", old_key.alias(_KEY), "order_key", F.lit(True).alias(_DELETE))
        last = (
            own.unionByName(ended)
            .groupBy("source_table", _KEY)
            .agg(F.max("order_key").alias("last"), F.max_by(_DELETE, "order_key").alias("deleted"))
        )
        bound = _truncate_bound({t: ok for t, ok in truncates.items() if t in tables})
        kept = bound.isNull() | (F.col("last") > bound)
        live = kept & ~F.col("deleted")
        folded = last.groupBy("source_table").agg(
            F.count(F.when(live, 1)).alias("live"),
            F.max(F.when(live, F.col("last"))).alias("last_live"),
            F.max(F.when(kept, F.col("last"))).alias("last_any"),
        )
        for row in folded.collect():
            out[row["source_table"]] = ExpectedMirror(int(row["live"]), row["last_live"], row["last_any"])
    return out


def gather(spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings) -> LakeFacts:
    """Read the topic and the lake; reduce them to ``LakeFacts``."""
    if not lake_tables.lake_exists(spark, settings):
        raise LakeError(f"no lake at {settings.lake()}: check --lake (BINLAKE_SINK_LAKE_URI)")
    starts = topic_start_offsets(kafka, settings.topic)
    # Read several times: kept as rows (a local checkpoint), not in Spark's columnar cache, which builds
    # batches of 10,000 rows in memory before it can spill them, a few hundred MB each for wide images (a
    # 1 GB driver ran out on a 200,000-event topic); rows are spilled to disk as memory runs short.
    decoded = read_topic(spark, settings, kafka).localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
    try:
        events = (
            changelog_rows(decoded, 1)  # every field as a column (``read_topic`` decodes them all)
            .select(
                *COORDINATES,
                "source_table",
                "op",
                sequence().alias("order_key"),
                F.expr(origin_sql()).alias(_ORIGIN),
                "ddl",
                "before",
                "after",
            )
            .localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
        )
        try:
            return dataclasses.replace(_gather(spark, settings, decoded, events), topic_start=starts)
        finally:
            delta.release(events)
    finally:
        delta.release(decoded)


def _gather(spark: SparkSession, settings: SinkSettings, decoded: DataFrame, events: DataFrame) -> LakeFacts:
    topic = settings.topic
    undecodable = decoded.where(F.col(REASON).isNotNull()).count()
    topic_tables = _topic_tables(events)

    changelog_tables: dict[str, ChangelogTable] = {}
    other_topics: dict[str, int] = {}
    if delta.exists(spark, settings.changelog_uri()):
        changelog = spark.read.format("delta").load(settings.changelog_uri())
        for row in changelog.groupBy("_kafka_topic").count().collect():
            if row["_kafka_topic"] != topic:
                other_topics[row["_kafka_topic"]] = int(row["count"])
        own = changelog.where(F.col("_kafka_topic") == topic).withColumn("order_key", sequence())
        changelog_tables = _changelog_tables(own, events)
    elif topic_tables:
        changelog_tables = {t: ChangelogTable(missing=f.events) for t, f in topic_tables.items()}

    quarantine_rows = quarantine_records = 0
    if delta.exists(spark, settings.quarantine_uri()):
        quarantine = spark.read.format("delta").load(settings.quarantine_uri()).where(F.col("_kafka_topic") == topic)
        counted = quarantine.agg(F.count(F.lit(1)), F.count_distinct(*COORDINATES)).first()
        if counted is not None:
            quarantine_rows, quarantine_records = int(counted[0]), int(counted[1])

    mirrors = _mirrors(spark, settings)
    keys = {table: m.key for table, m in mirrors.items() if m.key}
    truncates = {
        table: last
        for table, m in mirrors.items()
        if m.tracks_truncates and (last := topic_tables.get(table, TopicTable()).last_truncate) is not None
    }
    expected = expected_mirrors(events, keys, truncates) if keys else {}

    names = sorted(set(topic_tables) | set(changelog_tables) | set(mirrors))
    tables = tuple(
        TableFacts(
            table=name,
            topic=topic_tables.get(name, TopicTable()),
            changelog=changelog_tables.get(name, ChangelogTable()),
            mirror=mirrors.get(name),
            expected=expected.get(name),
        )
        for name in names
    )
    return LakeFacts(
        topic=topic,
        tables=tables,
        undecodable=undecodable,
        quarantine_rows=quarantine_rows,
        quarantine_records=quarantine_records,
        other_topics=other_topics,
    )
