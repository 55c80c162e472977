"""``changelog.arrow_rows`` without Spark: rejects and their reasons, table names, event dates, the schema."""

from __future__ import annotations

import datetime as dt

import pytest

from binlake.shared.codec import avro
from binlake.spark_sink.changelog import arrow_rows
from binlake.spark_sink.changelog.arrow_rows import KafkaRecord, changelog_batch, event_day, reject_reason, source_table
from tests.bench import sink_bench

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (None, "null value (tombstone)"),
        (b"\xc3\x01\x00", "shorter than the single-object header"),
        (b"0123456789ab", "no Avro single-object marker C3 01"),
        (b"\xc3\x01" + bytes(8) + b"\x00", "unknown schema fingerprint 0000000000000000"),
    ],
)
def test_a_header_that_is_no_canonical_event_is_rejected_with_its_reason(value: bytes | None, reason: str) -> None:
    assert reject_reason(value) == reason
    batch = changelog_batch([KafkaRecord("t", 0, 7, 0, None, value)])
    assert batch.rows.num_rows == 0
    assert [(r.record.offset, r.reason) for r in batch.rejected] == [(7, reason)]


@pytest.mark.parametrize("body", [b"", b"\xff\xff\xff\xff\xff", b"\x02"])
def test_a_body_that_does_not_decode_is_corrupt(body: bytes) -> None:
    value = avro.MAGIC + avro.fingerprint() + body
    assert reject_reason(value) is None
    assert [r.reason for r in changelog_batch([KafkaRecord("t", 0, 1, 0, None, value)]).rejected] == [
        "corrupt Avro body"
    ]


def test_good_rows_keep_their_order_and_rejects_do_not_stop_them() -> None:
    items = sink_bench.generate(5, seed=3)
    records = [KafkaRecord("t", 1, i * 2, 0, item.key, item.value) for i, item in enumerate(items)]
    records.insert(2, KafkaRecord("t", 1, 99, 0, None, None))
    batch = changelog_batch(records)
    assert batch.rows.column("_kafka_offset").to_pylist() == [0, 2, 4, 6, 8]
    assert batch.rows.column("event_avro").to_pylist() == [item.value for item in items]
    assert batch.rows.column("key").to_pylist() == [item.key.decode() for item in items]
    assert [r.record.offset for r in batch.rejected] == [99]


def test_source_table_is_sql_concat_ws_of_the_name_parts() -> None:
    assert source_table({"tenant": None, "database": "db", "schema": None, "table": "t"}) == "db.t"
    assert source_table({"tenant": "x", "database": "db", "schema": "s", "table": "t"}) == "x.db.s.t"
    assert source_table({"tenant": None, "database": None, "schema": None, "table": None}) == "_none"
    assert source_table({"tenant": "", "database": "db", "schema": None, "table": "t"}) == ".db.t"


def test_event_day_is_the_utc_date_of_ts_ms_else_of_the_kafka_timestamp() -> None:
    def day(ts_ms: int | None, kafka_ms: int) -> dt.date:
        return dt.date(1970, 1, 1) + dt.timedelta(days=event_day(ts_ms, kafka_ms))

    assert day(1_700_000_000_000, 0) == dt.date(2023, 11, 14)
    assert day(None, 1_700_000_000_000) == dt.date(2023, 11, 14)
    assert day(-1, 0) == dt.date(1969, 12, 31)
    assert day(86_399_999, 0) == dt.date(1970, 1, 1)


def test_the_schema_is_the_changelogs_columns_in_order() -> None:
    assert arrow_rows.changelog_schema().names == [
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
