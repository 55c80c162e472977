"""The textbook sink: what a user writes from the Delta Lake docs' CDC upsert example, as a bench contender.

Structured Streaming ``foreachBatch``: decode the batch's canonical events
(spark-avro's ``from_avro``, the whole event: ``PACKAGE``, which the bench's
session adds for it; the sink has a decoder of its own), then per source table keep each key's newest
event (``row_number()`` over the key, by ``order_key`` descending) and run one
Delta ``MERGE``: matched and the newest is a DELETE -> delete, matched ->
update all, not matched and not a DELETE -> insert. The mirror tables are typed
like binlake's (the same value conversions, ``spark_sink.mirror.typemap``), created
before the clock starts, as a user would create their tables once.

What it does not do, and binlake does: partial images (an absent column is
overwritten with NULL here), floors (a replayed old event overwrites newer
state), tombstones (a late event resurrects a deleted row), TRUNCATE, schema
changes, a changelog, a quarantine, exactly once across restarts (a replayed
batch re-runs its MERGEs: idempotent only for full images). It is the cost
floor of the common design, not a correct alternative.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from binlake.shared.codec import avro
from binlake.shared.config.settings import KafkaSettings

PACKAGE: Final = "org.apache.spark:spark-avro_2.13:4.1.1"
"""spark-avro for the peer's ``from_avro`` (4.2.0 is not on Maven Central here; 4.1.1 runs on Spark 4.2)."""


@dataclass(frozen=True, slots=True)
class PeerTable:
    """One source table as the user declares it: its columns (name, Spark type) and primary key."""

    name: str
    columns: list[tuple[str, Any]]
    key: list[str]


def kafka_stream(spark: Any, kafka: KafkaSettings, topic: str, *, max_offsets: int) -> Any:
    """The topic from its start as every contender reads it (available-now batches of ``max_offsets``)."""
    from binlake.spark_sink.events.source import kafka_options

    return (
        spark.readStream.format("kafka")
        .options(**kafka_options(kafka))
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("failOnDataLoss", "true")
        .option("maxOffsetsPerTrigger", str(max_offsets))
        .load()
    )


def tables_of(values: list[bytes]) -> list[PeerTable]:
    """The tables of some encoded events, from their first row event's descriptors (the user's DDL)."""
    from binlake.spark_sink.mirror.typemap import spark_type

    found: dict[str, PeerTable] = {}
    for value in values:
        event = avro.decode(value)
        table = f"{event.source.database}.{event.source.table}"
        if table in found or event.op not in ("INSERT", "UPDATE", "DELETE") or not event.primary_key:
            continue
        columns = []
        for column in event.columns:
            data_type = spark_type(column.logical_type, column.precision, column.scale)
            if data_type is not None:
                columns.append((column.name, data_type))
        found[table] = PeerTable(table, columns, list(event.primary_key))
    return sorted(found.values(), key=lambda t: t.name)


def textbook_copy(
    spark: Any, kafka: KafkaSettings, topic: str, lake: Path, tables: list[PeerTable], *, max_offsets: int
) -> float:
    """Run the textbook sink over the topic (available-now); the seconds from start to termination."""
    from delta.tables import DeltaTable
    from pyspark.sql import Column, DataFrame, Window
    from pyspark.sql import functions as F
    from pyspark.sql.avro.functions import from_avro
    from pyspark.sql.types import StringType, StructField, StructType

    from binlake.spark_sink.delta import quote
    from binlake.spark_sink.mirror.typemap import convert, sql_string

    uris = {t.name: (lake / t.name.replace(".", "__")).as_uri() for t in tables}
    for t in tables:  # the user's tables, created once up front
        fields = [StructField(name, data_type) for name, data_type in t.columns]
        schema = StructType([*fields, StructField("_order_key", StringType())])
        spark.createDataFrame([], schema).write.format("delta").save(uris[t.name])

    def upsert(batch: DataFrame, batch_id: int) -> None:
        schema = json.dumps(avro.schema_json())
        options = {"mode": "PERMISSIVE", "enableStableIdentifiersForUnionType": "true"}
        body = F.expr("substring(value, 11)")  # after the single-object header
        events = batch.select(from_avro(body, schema, options).alias("e")).select("e.*")
        events = events.withColumn("_table", F.concat_ws(".", "source.database", "source.table"))
        events = events.persist()
        try:
            for t in tables:
                image = "CASE WHEN op = 'DELETE' THEN before ELSE after END"
                typed = events.where(F.col("_table") == t.name).selectExpr(
                    "op",
                    "order_key AS _order_key",
                    *[
                        f"{convert(f'({image})[{sql_string(name)}]', data_type)} AS {quote(name)}"
                        for name, data_type in t.columns
                    ],
                )
                newest = Window.partitionBy(*[quote(k) for k in t.key]).orderBy(F.col("_order_key").desc())
                latest = typed.withColumn("_rn", F.row_number().over(newest)).where("_rn = 1").drop("_rn")
                condition = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in t.key)
                values: dict[str, str | Column] = {quote(name): f"s.{quote(name)}" for name, _ in t.columns}
                values["_order_key"] = "s._order_key"
                (
                    DeltaTable.forPath(spark, uris[t.name])
                    .alias("t")
                    .merge(latest.alias("s"), condition)
                    .whenMatchedDelete(condition="s.op = 'DELETE'")
                    .whenMatchedUpdate(set=values)
                    .whenNotMatchedInsert(condition="s.op != 'DELETE'", values=values)
                    .execute()
                )
        finally:
            events.unpersist()

    frame = kafka_stream(spark, kafka, topic, max_offsets=max_offsets)
    # Delta's default (the sink's session sets "none": its MERGE sources are local checkpoints already);
    # the textbook MERGEs a cached frame, which "none" refuses.
    materialize = "spark.databricks.delta.merge.materializeSource"
    before = spark.conf.get(materialize, None)
    spark.conf.set(materialize, "auto")
    started = time.perf_counter()
    query = (
        frame.writeStream.foreachBatch(upsert)
        .option("checkpointLocation", (lake / "_checkpoint").as_uri())
        .trigger(availableNow=True)
        .start()
    )
    try:
        query.awaitTermination()
    finally:
        if before is None:
            spark.conf.unset(materialize)
        else:
            spark.conf.set(materialize, before)
    seconds = time.perf_counter() - started
    if query.exception() is not None:
        raise RuntimeError(f"the textbook sink failed: {query.exception()}")
    return seconds


def mirror_rows(spark: Any, lake: Path, tables: list[PeerTable]) -> int:
    """Rows in the textbook sink's tables (a sanity check that it did the work)."""
    total = 0
    for t in tables:
        total += spark.read.format("delta").load((lake / t.name.replace(".", "__")).as_uri()).count()
    return total
