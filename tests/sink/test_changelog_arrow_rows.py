"""Changelog rows made without Spark (``changelog.arrow_rows``) are the rows the changelog query makes.

The same Kafka records go through Spark (``events.source.decode`` + ``events.rows.changelog_rows``, the
changelog query's own code) and through ``arrow_rows.changelog_batch``: every column of every good record
must be equal, and every reject must carry the reason Spark gives it. The Arrow rows, appended by delta-rs
to a changelog Spark created, read back in Spark as the rows Spark makes.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
from deltalake import CommitProperties, Transaction, write_deltalake
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.event.model import Source
from binlake.spark_sink.changelog.arrow_rows import ChangelogBatch, KafkaRecord, changelog_batch
from binlake.spark_sink.changelog.table import ensure_table
from binlake.spark_sink.events.rows import changelog_rows
from binlake.spark_sink.events.source import KAFKA_SCHEMA, REASON, decode
from binlake.spark_sink.observe import batch_stats
from tests.bench import sink_bench
from tests.support.changelog_events import ddl_event
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

TOPIC = "binlake.events"
KAFKA_TS_MS = 1_764_000_000_123  # 2025-11-24 UTC


def _records() -> list[KafkaRecord]:
    """Events of the benchmark's workload (8 tables, every row op), odd envelopes, and every kind of reject."""
    items = sink_bench.generate(400, seed=11)
    values: list[tuple[bytes | None, bytes | None]] = [(item.key, item.value) for item in items]
    values += [
        # A tenant and a schema in the name; no event time (the Kafka timestamp dates the row); no key.
        (None, avro.encode(ddl_event(Source("oms", "oceanbase", "db", "sch", "t", tenant="ten"), None))),
        # No name at all: the table is "_none"; an event time before the epoch.
        (b'["k"]', avro.encode(ddl_event(Source("oms", "oceanbase", None, None, None), -86_400_001))),
        (b"tombstone", None),
        (None, b"\xc3\x01\x00"),
        (None, b'{"json": true, "not": "avro"}'),
        (None, b"\xc3\x01" + bytes(8) + b"\x02"),
        (None, avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff"),
        (None, avro.MAGIC + avro.fingerprint()),
    ]
    return [
        KafkaRecord(TOPIC, offset % 4, offset, KAFKA_TS_MS + offset, key, value)
        for offset, (key, value) in enumerate(values)
    ]


def _spark_rows(spark: SparkSession, records: list[KafkaRecord]) -> tuple[dict[int, dict[str, Any]], dict[int, str]]:
    raw = spark.createDataFrame(
        [
            (
                r.key,
                r.value,
                r.topic,
                r.partition,
                r.offset,
                dt.datetime.fromtimestamp(r.timestamp_ms / 1000, dt.UTC),
                0,
            )
            for r in records
        ],
        KAFKA_SCHEMA,
    )
    decoded = decode(raw, envelope=True)
    rows = changelog_rows(decoded).withColumn("_kafka_timestamp", F.unix_micros("_kafka_timestamp"))
    good = {row["_kafka_offset"]: row.asDict(recursive=True) for row in rows.collect()}
    reasons = {row["_kafka_offset"]: row[REASON] for row in decoded.where(F.col(REASON).isNotNull()).collect()}
    return good, reasons


def _arrow_rows(batch: ChangelogBatch) -> dict[int, dict[str, Any]]:
    columns = {name: batch.rows.column(name).to_pylist() for name in batch.rows.schema.names}
    out: dict[int, dict[str, Any]] = {}
    for i, offset in enumerate(columns["_kafka_offset"]):
        row = {name: values[i] for name, values in columns.items()}
        stamp = row["_kafka_timestamp"]
        row["_kafka_timestamp"] = (
            None if stamp is None else (stamp - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
        )
        out[offset] = row
    return out


def test_arrow_rows_equal_the_changelog_querys_rows(spark: SparkSession) -> None:
    records = _records()
    spark_good, spark_reasons = _spark_rows(spark, records)
    batch = changelog_batch(records)
    arrow_good = _arrow_rows(batch)
    assert len(arrow_good) == 402 and len(batch.rejected) == 6
    assert arrow_good.keys() == spark_good.keys()
    for offset, expected in spark_good.items():
        assert arrow_good[offset] == expected, offset
    assert {r.record.offset: r.reason for r in batch.rejected} == spark_reasons
    assert {row["source_table"] for row in arrow_good.values()} >= {"ten.db.sch.t", "_none", "bench.t00"}


def test_arrow_rows_appended_by_delta_rs_read_back_in_spark(spark: SparkSession, tmp_path: Path) -> None:
    """delta-rs appends the rows to a changelog Spark created (its protocol: change data feed, append-only
    invariants), under a transaction id; Spark reads back exactly the rows it would have written."""
    uri = str(tmp_path / "changelog")
    ensure_table(spark, uri, ["source_table", "event_date"])
    records = _records()
    batch = changelog_batch(records)
    write_deltalake(
        uri,
        batch.rows,
        mode="append",
        partition_by=["source_table", "event_date"],
        commit_properties=CommitProperties(app_transactions=[Transaction("binlake-test", 0)]),
    )
    back = spark.read.format("delta").load(uri).withColumn("_kafka_timestamp", F.unix_micros("_kafka_timestamp"))
    read = {row["_kafka_offset"]: row.asDict(recursive=True) for row in back.collect()}
    expected, _ = _spark_rows(spark, records)
    assert read == expected


def test_batch_statistics_from_python_values_equal_sparks(spark: SparkSession) -> None:
    """The writer's metrics (``batch_stats.from_values`` of its rows) are those the changelog query computes."""
    now_ms = 1_764_000_000_000
    ages = [50, 1_500, 30_000, 600_000, 7_200_000, 3 * 86_400_000]
    items = sink_bench.generate(120, seed=4)
    records = [
        KafkaRecord(TOPIC, 0, i, KAFKA_TS_MS, item.key, item.with_ts(now_ms - ages[i % len(ages)]))
        for i, item in enumerate(items)
    ]
    records += [r for r in _records() if r.offset >= 400]  # events without ts_ms, before 1970, and rejects
    rows = changelog_batch(records).rows
    values = {name: rows.column(name).to_pylist() for name in ("source_table", "op", "ts_ms")}
    ours = batch_stats.from_values(values["source_table"], values["op"], values["ts_ms"], now_ms=now_ms)
    raw = spark.createDataFrame(
        [(r.key, r.value, r.topic, r.partition, r.offset, dt.datetime.fromtimestamp(0, dt.UTC), 0) for r in records],
        KAFKA_SCHEMA,
    )
    assert ours == batch_stats.collect(changelog_rows(decode(raw, envelope=True)), now_ms=now_ms)
    assert ours.without_ts == 1 and len({b.width_ms for b in ours.event_time}) == 4
