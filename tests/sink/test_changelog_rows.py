"""The changelog query's rows and rejects (``events.source.decode`` + ``events.rows.changelog_rows``), on Spark.

Every kind of record the unified topic may hold: the benchmark's events (every row op), events whose
envelope names a tenant and a schema, no table at all, no event time or one before 1970, and every kind of
reject. Each good record is one row, its name and event date by the rules of docs/spark-sink.md ("The
changelog"), its key and body as the topic holds them; each reject has its reason.
"""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.event.model import Source
from binlake.spark_sink.events.rows import changelog_rows
from binlake.spark_sink.events.source import KAFKA_SCHEMA, REASON, decode
from tests.bench import sink_bench
from tests.support.changelog_events import ddl_event
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

TOPIC = "binlake.events"
KAFKA_TS = dt.datetime(2025, 11, 24, 16, 0, 0, 123000, tzinfo=dt.UTC)
COLUMNS = [
    "_kafka_topic",
    "_kafka_partition",
    "_kafka_offset",
    "_kafka_timestamp",
    "op",
    "source",
    "order_key",
    "ts_ms",
    "ingest_ts_ms",
    "primary_key",
    "ddl",
    "origin",
    "source_table",
    "event_date",
    "key",
    "event_avro",
]
REJECTS: list[tuple[bytes | None, str]] = [
    (None, "null value (tombstone)"),
    (b"\xc3\x01\x00", "shorter than the single-object header"),
    (b'{"json": true, "not": "avro"}', "no Avro single-object marker C3 01"),
    (b"\xc3\x01" + bytes(8) + b"\x02", "unknown schema fingerprint 0000000000000000"),
    (avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff", "corrupt Avro body"),
    (avro.MAGIC + avro.fingerprint(), "corrupt Avro body"),
    (avro.MAGIC + avro.fingerprint() + b"\x02", "corrupt Avro body"),
]


def test_every_record_is_a_row_or_a_reject_with_its_reason(spark: SparkSession) -> None:
    items = sink_bench.generate(200, seed=11)
    odd = [
        # A tenant and a schema in the name; no event time (the Kafka timestamp dates the row); no key.
        (None, avro.encode(ddl_event(Source("oms", "oceanbase", "db", "sch", "t", tenant="ten"), None))),
        # No name at all: the table is "_none"; an event time before the epoch.
        (b'["k"]', avro.encode(ddl_event(Source("oms", "oceanbase", None, None, None), -86_400_001))),
        # An empty tenant is a name part (SQL concat_ws skips only NULLs).
        (None, avro.encode(ddl_event(Source("oms", "oceanbase", "db", None, "t", tenant=""), 1_700_000_000_000))),
    ]
    values = [(item.key, item.value) for item in items] + odd + [(b"bad", value) for value, _ in REJECTS]
    raw = spark.createDataFrame(
        [(key, value, TOPIC, offset % 3, offset, KAFKA_TS, 0) for offset, (key, value) in enumerate(values)],
        KAFKA_SCHEMA,
    )
    decoded = decode(raw, envelope=True)
    rows = changelog_rows(decoded)
    assert rows.columns == COLUMNS
    good = {row["_kafka_offset"]: row for row in rows.collect()}
    reasons = {row["_kafka_offset"]: row[REASON] for row in decoded.where(F.col(REASON).isNotNull()).collect()}

    first_reject = len(items) + len(odd)
    assert reasons == {first_reject + i: reason for i, (_, reason) in enumerate(REJECTS)}
    assert sorted(good) == list(range(first_reject))
    for offset, item in enumerate(items):
        row = good[offset]
        assert (row["key"], row["event_avro"]) == (item.key.decode(), item.value)
        assert row["source_table"].startswith("bench.t") and row["op"] in {"INSERT", "UPDATE", "DELETE"}
        assert row["_kafka_partition"] == offset % 3 and row["_kafka_topic"] == TOPIC
    tenant, nameless, empty_tenant = (good[len(items) + i] for i in range(3))
    assert (tenant["source_table"], tenant["key"], tenant["ts_ms"]) == ("ten.db.sch.t", None, None)
    assert tenant["event_date"] == KAFKA_TS.date()  # no event time: the Kafka timestamp's UTC date
    assert (nameless["source_table"], nameless["key"]) == ("_none", '["k"]')
    assert nameless["event_date"] == dt.date(1969, 12, 30)  # the UTC date of ts_ms, before 1970 too
    assert (empty_tenant["source_table"], empty_tenant["event_date"]) == (".db.t", dt.date(2023, 11, 14))
    assert tenant["ddl"]["sql"] == "ALTER TABLE t ADD COLUMN c INT" and tenant["origin"]["offset"] == 41
