"""debezium-json: standard Debezium envelopes and OceanBase OMS Debezium / DebeziumFlatten."""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest

from binlake.services.debezium_json.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.errors import ConfigError
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt, SqlTime
from binlake.shared.parsing import errors, registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import RejectError
from binlake.shared.parsing.result import Parsed, Rejected
from tests.support.order_support import FIRST_OFFSET, assert_strictly_increasing, kafka_key, keys_in_input_order

pytestmark = pytest.mark.unit

DECIMAL = "org.apache.kafka.connect.data.Decimal"
CTX = ParseContext(topic="t", partition=0, offset=9)
UTC = dt.UTC


def source(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": "2.5.0.Final",
        "connector": "mysql",
        "name": "dbserver1",
        "ts_ms": 1668489131000,
        "snapshot": "false",
        "db": "inventory",
        "table": "orders",
        "server_id": 1,
        "gtid": None,
        "file": "mysql-bin.000003",
        "pos": 1234,
        "row": 0,
    }
    doc.update(overrides)
    return doc


def oms_source(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "connector": "OB_MYSQL",
        "name": "OMS",
        "version": "",
        "ts_ms": 1668491621000,
        "db": "test",
        "table": "t",
        "pos": "703223@1668491621",
    }
    doc.update(overrides)
    return doc


def change(op: str = "c", **overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "before": None,
        "after": {"id": 1},
        "source": source(),
        "op": op,
        "ts_ms": 1668489131456,
        "transaction": None,
    }
    doc.update(overrides)
    return doc


def with_schema(payload: dict[str, Any], columns: list[dict[str, Any]]) -> dict[str, Any]:
    row = {"type": "struct", "optional": True, "name": "x.Value", "fields": columns}
    fields = [dict(row, field="before"), dict(row, field="after"), {"type": "string", "field": "op"}]
    return {"schema": {"type": "struct", "fields": fields}, "payload": payload}


def run(doc: Any, ctx: ParseContext = CTX) -> Parsed:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc, ensure_ascii=False).encode()
    return parse(raw, ctx)


def one(doc: Any, ctx: ParseContext = CTX) -> ChangeEvent:
    parsed = run(doc, ctx)
    assert len(parsed.events) == 1
    return parsed.events[0]


def reject(doc: Any, ctx: ParseContext = CTX) -> RejectError:
    with pytest.raises(RejectError) as info:
        run(doc, ctx)
    return info.value


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def test_module_constants() -> None:
    assert FORMAT_ID == "debezium-json"
    assert PARSER_VERSION == "1"


@pytest.mark.parametrize(("op", "expected"), [("c", "INSERT"), ("u", "UPDATE"), ("r", "SNAPSHOT")])
def test_row_op_mapping(op: str, expected: str) -> None:
    event = one(change(op))
    assert event.op == expected
    assert event.after == {"id": 1}
    assert event.before is None
    assert event.changed_columns is None


def test_delete_uses_before_and_update_keeps_both_images() -> None:
    deleted = one(change("d", before={"id": 1, "v": "x"}, after=None))
    assert (deleted.op, deleted.before, deleted.after) == ("DELETE", {"id": 1, "v": "x"}, None)
    updated = one(change("u", before={"id": 1, "v": "x"}, after={"id": 1, "v": "y"}))
    assert updated.before == {"id": 1, "v": "x"}
    assert updated.after == {"id": 1, "v": "y"}


def test_insert_ignores_before_image() -> None:
    assert one(change("c", before={"id": 0})).before is None


def test_source_fields_and_times() -> None:
    event = one(change(source=source(gtid="uuid:7"), transaction={"id": "tx-1", "total_order": 1}))
    assert event.source.db_type == "MYSQL"
    assert (event.source.database, event.source.table) == ("inventory", "orders")
    assert (event.source.binlog_file, event.source.binlog_pos) == ("mysql-bin.000003", 1234)
    assert event.source.gtid == "uuid:7"
    assert event.source.transaction_id == "tx-1"
    assert event.ts_ms == 1668489131000
    assert event.ingest_ts_ms == 1668489131456
    assert event.primary_key == []


def test_order_key_follows_binlog_file_position_and_row() -> None:
    keys = [
        one(change(source=source(file="mysql-bin.000009", pos=99999, row=0))).order_key,
        one(change(source=source(file="mysql-bin.000010", pos=4, row=0))).order_key,
        one(change(source=source(file="mysql-bin.000010", pos=4, row=1))).order_key,
        one(change(source=source(file="mysql-bin.000010", pos=4, row=12))).order_key,
        one(change(source=source(file="mysql-bin.000010", pos=5, row=0))).order_key,
    ]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert keys[3] == "00000000000000000010.00000000000004000012.000000"


def test_oms_order_key_is_the_input_kafka_order_and_masked_pos_is_kept() -> None:
    masked = one(change(source=oms_source(ts_ms=1668495861000, pos="436999@166849****")))
    assert masked.source.checkpoint == "436999@166849****"
    assert masked.source.binlog_pos is None
    assert masked.order_key == "00000000000000000000.00000000000000000009.000000"  # CTX: partition 0, offset 9


def test_issue16_oms_same_row_same_millisecond_keeps_input_order() -> None:
    # Before: (source.ts_ms, offset before "@"): equal for two changes in one ms at one checkpoint.
    same = change("u", before={"id": 1}, source=oms_source(ts_ms=1668491621000, pos="703223@1668491621"))
    assert_strictly_increasing(keys_in_input_order(parse, [same, same]))


def test_issue16_oms_and_other_connectors_never_order_by_time() -> None:
    # A transaction that started earlier (smaller ts_ms) but committed later comes later.
    later = oms_source(ts_ms=1668491621000, pos="703223@1668491621")
    earlier = oms_source(ts_ms=1668491000000, pos="100@1668491000")
    assert_strictly_increasing(keys_in_input_order(parse, [change(source=later), change(source=earlier)]))
    sqlserver = {"connector": "sqlserver", "name": "s", "db": "d", "schema": "dbo", "table": "t"}
    keys = keys_in_input_order(
        parse, [change(source={**sqlserver, "ts_ms": 2000}), change(source={**sqlserver, "ts_ms": 1000})]
    )
    assert keys == [kafka_key(FIRST_OFFSET), kafka_key(FIRST_OFFSET + 1)]


def test_postgres_lsn_is_a_log_position() -> None:
    pg = {"connector": "postgresql", "name": "p", "db": "d", "schema": "public", "table": "t", "ts_ms": 5}
    assert one(change(source={**pg, "lsn": 24023128})).order_key == f"{24023128:020d}.{0:020d}.000000"


def test_oms_seconds_ts_and_zero_ts() -> None:
    assert one(change(source=oms_source(ts_ms=1668491621))).ts_ms == 1668491621000
    assert one(change(source=oms_source(ts_ms=0))).ts_ms is None


def test_schema_typed_values() -> None:
    columns: list[dict[str, Any]] = [
        {"type": "int32", "field": "id"},
        {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "4"}, "field": "d"},
        {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal", "field": "v"},
        {"type": "int32", "name": "io.debezium.time.Date", "field": "day"},
        {"type": "int32", "name": "io.debezium.time.Time", "field": "t_ms"},
        {"type": "int64", "name": "io.debezium.time.NanoTime", "field": "t_ns"},
        {"type": "int64", "name": "io.debezium.time.NanoTimestamp", "field": "ts_ns"},
        {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp", "field": "connect_ts"},
        {"type": "int32", "name": "org.apache.kafka.connect.data.Date", "field": "connect_day"},
        {"type": "string", "name": "io.debezium.time.ZonedTimestamp", "field": "zoned"},
        {"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "16"}, "field": "bits"},
        {"type": "struct", "name": "io.debezium.data.geometry.Point", "field": "pt"},
        {"type": "boolean", "field": "flag"},
    ]
    after = {
        "id": 7,
        "d": b64((-1234567).to_bytes(4, "big", signed=True)),
        "v": {"scale": 0, "value": b64((2**70).to_bytes(9, "big", signed=True))},
        "day": 0,
        "t_ms": 3_600_000,
        "t_ns": 1_500,
        "ts_ns": 1_668_489_131_123_456_789,
        "connect_ts": 1_668_489_131_000,
        "connect_day": 19311,
        "zoned": "2022-11-15T13:12:11.25+08:00",
        "bits": b64(bytes([0x01, 0x80])),
        "pt": {"wkb": b64(b"\x01\x01"), "srid": None},
        "flag": False,
    }
    event = one(with_schema(change(after=after), columns))
    image = event.after
    assert image is not None
    assert image["d"] == Decimal("-123.4567")
    assert str(image["d"]) == "-123.4567"
    assert image["v"] == 2**70
    assert image["day"] == dt.date(1970, 1, 1)
    assert image["t_ms"] == SqlTime(3_600_000_000)
    assert image["t_ns"] == SqlTime(1)
    assert image["ts_ns"] == dt.datetime(2022, 11, 15, 5, 12, 11, 123456)
    assert image["connect_ts"] == dt.datetime(2022, 11, 15, 5, 12, 11)  # DATETIME wall clock, no zone
    assert image["connect_day"] == dt.date(2022, 11, 15)
    assert image["zoned"] == dt.datetime(2022, 11, 15, 5, 12, 11, 250000, tzinfo=UTC)
    assert image["bits"] == 0x8001  # little-endian
    assert image["pt"] == b"\x01\x01"
    assert image["flag"] is False
    logical = {column.name: (column.logical_type, column.source_type, column.inferred) for column in event.columns}
    assert logical["d"] == ("decimal", "org.apache.kafka.connect.data.Decimal", False)
    assert logical["zoned"][0] == "timestamp"
    assert logical["connect_ts"][0] == "datetime"
    assert logical["bits"][0] == "bit"
    assert logical["pt"][0] == "geometry"
    decimal_column = next(column for column in event.columns if column.name == "d")
    assert (decimal_column.precision, decimal_column.scale) == (None, 4)


def test_schema_decimal_as_json_number_is_exact() -> None:
    columns = [{"type": "bytes", "name": DECIMAL, "parameters": {"scale": "5"}, "field": "d"}]
    raw = json.dumps(with_schema(change(after={"d": 0}), columns)).replace('"d": 0', '"d": 1241.41000').encode()
    image = one(raw).after
    assert image is not None
    assert str(image["d"]) == "1241.41000"


def test_schema_bytes_are_base64_for_debezium_and_hex_for_oms() -> None:
    columns = [{"type": "bytes", "field": "b"}]
    standard = one(with_schema(change(after={"b": "aGk="}), columns))
    oms = one(with_schema(change(after={"b": "6869"}, source=oms_source()), columns))
    assert standard.after == {"b": b"hi"}
    assert oms.after == {"b": b"hi"}
    hex_option = ParseContext(options={"bytes_encoding": "hex"})
    assert one(with_schema(change(after={"b": "6869"}), columns), hex_option).after == {"b": b"hi"}


def test_oms_schema_string_column_with_number_keeps_digits() -> None:
    columns = [{"type": "string", "field": "c24"}]
    event = one(with_schema(change(after={"c24": 1668489131000}, source=oms_source()), columns))
    assert event.after == {"c24": "1668489131000"}


def test_schemaless_inference_standard_vs_oms() -> None:
    raw = json.dumps(change(after={"big": 0, "f": 0, "s": "x", "n": None}))
    raw = raw.replace('"big": 0', '"big": 18446744073709551615').replace('"f": 0', '"f": 2.50')
    standard = one(raw.encode())
    assert standard.after is not None
    assert isinstance(standard.after["big"], BigInt)
    assert standard.after["f"] == Decimal("2.50")
    assert str(standard.after["f"]) == "2.50"
    assert all(column.inferred for column in standard.columns)
    oms_raw = raw.replace('"connector": "mysql"', '"connector": "OB_MYSQL"').encode()
    oms = one(oms_raw)
    assert oms.after is not None
    assert oms.after["f"] == 2.5
    assert isinstance(oms.after["f"], float)
    types = {column.name: column.logical_type for column in oms.columns}
    assert types == {"f": "float64", "big": "integer", "s": "string", "n": "unknown"}


def test_primary_key_option_is_checked_against_the_identifying_image() -> None:
    ctx = ParseContext(options={"primary_key": "id, region"})
    event = one(change(after={"id": 1, "region": "eu", "v": 2}), ctx)
    assert event.primary_key == ["id", "region"]
    error = reject(change("d", before={"id": 1}, after=None), ctx)
    assert error.code == errors.INCONSISTENT
    assert "region" in error.reason


def test_controls_produce_no_events() -> None:
    assert run(b"").control == "tombstone"
    assert run(b"null").control == "tombstone"
    assert run({"schema": None, "payload": None}).control == "tombstone"
    assert run({"status": "END", "id": "x", "event_count": 2}).control == "transaction_end"
    assert run(change("m")).control == "message"
    beat = run({"ts_ms": 1668489131000})
    assert (beat.events, beat.control, beat.heartbeats[0].ts_ms) == ([], "heartbeat", 1668489131000)
    oms_beat = run({"op": "HEARTBEAT", "source": oms_source(ts_ms=1668496109)})
    assert oms_beat.heartbeats[0].ts_ms == 1668496109000
    assert oms_beat.heartbeats[0].table == "test.t"


def test_truncate_becomes_truncate_event() -> None:
    event = one(change("t", after=None, source=source(db="shop", table="my`t")))
    assert event.op == "TRUNCATE"
    assert event.ddl is not None
    assert event.ddl.kind == "TRUNCATE_TABLE"
    assert event.ddl.sql == ""  # Debezium sends no SQL; none is invented
    assert event.ddl.kind == "TRUNCATE_TABLE"


def test_schema_change_event_is_ddl() -> None:
    doc = {"source": source(), "databaseName": "inventory", "ddl": "CREATE TABLE t (id INT)", "tableChanges": []}
    event = one(doc)
    assert event.op == "DDL"
    assert event.ddl is not None
    assert event.ddl.kind == "CREATE_TABLE"
    assert event.source.database == "inventory"


def test_missing_table_falls_back_to_source_table_option() -> None:
    doc = change(source={"connector": "OB_MYSQL", "name": "OMS"})
    assert reject(doc).code == errors.MISSING_FIELD
    event = one(doc, ParseContext(source_table="db1.tab1"))
    assert (event.source.database, event.source.table) == ("db1", "tab1")


@pytest.mark.parametrize(
    ("doc", "code", "fragment"),
    [
        (b"{not json", errors.MALFORMED, "invalid JSON"),
        (b"\xff\xfe", errors.MALFORMED, ""),
        ([change()], errors.WRONG_FORMAT, "JSON object"),
        ({"data": [], "type": "INSERT", "database": "d", "table": "t"}, errors.WRONG_FORMAT, "not a Debezium"),
        ({"payload": {"after": {}}}, errors.MISSING_FIELD, "payload.op"),
        ({"payload": "x"}, errors.BAD_FIELD, "payload"),
        (dict(change(), op=["c"]), errors.BAD_FIELD, "'op'"),
        (change(op="q"), errors.UNSUPPORTED, "'q'"),
        (change(source=None), errors.MISSING_FIELD, "'source'"),
        (change(after=None), errors.MISSING_FIELD, "'after'"),
        (change("d"), errors.MISSING_FIELD, "'before'"),
        (change(after="x"), errors.BAD_FIELD, "after"),
        (change(source=source(file="binlog")), errors.BAD_FIELD, "binlog"),
        (change(source=source(row=1_000_000)), errors.BAD_FIELD, "source.row"),
        (change(source=source(connector="mongodb")), errors.UNSUPPORTED, "MongoDB"),
        ({"op": "HEARTBEAT", "source": {"ts_ms": 0}}, errors.MISSING_FIELD, "HEARTBEAT"),
        ({"status": "MAYBE", "id": "1"}, errors.UNSUPPORTED, "MAYBE"),
    ],
)
def test_rejects(doc: Any, code: str, fragment: str) -> None:
    error = reject(doc)
    assert error.code == code
    assert fragment in error.reason


def test_schema_value_rejects() -> None:
    decimal = [{"type": "bytes", "name": DECIMAL, "field": "d"}]
    assert reject(with_schema(change(after={"d": "AA=="}), decimal)).code == errors.BAD_FIELD  # no scale
    ints = [{"type": "int8", "field": "i"}]
    error = reject(with_schema(change(after={"i": 128}), ints))
    assert (error.code, "int8" in error.reason) == (errors.BAD_VALUE, True)
    dates = [{"type": "int32", "name": "io.debezium.time.Date", "field": "day"}]
    assert reject(with_schema(change(after={"day": 10**12}), dates)).code == errors.BAD_VALUE
    assert reject(with_schema(change(after={"day": "x"}), dates)).code == errors.BAD_VALUE


def test_bad_options_are_config_rejects() -> None:
    assert reject(change(), ParseContext(options={"bytes_encoding": "rot13"})).code == errors.CONFIG
    assert reject(change(), ParseContext(options={"primary_key": "a,,b"})).code == errors.CONFIG
    assert reject(change(), ParseContext(options={"order": "lsn"})).code == errors.CONFIG


# ---------------------------------------------------------------- one key space per stream (issue 48)

PG = {"version": "2.5.0.Final", "connector": "postgresql", "name": "p", "ts_ms": 5, "db": "d", "schema": "public",
      "table": "t", "txId": 555, "xmin": None}  # fmt: skip
KAFKA = ParseContext(topic="t", partition=0, offset=9, options={"order": "kafka"})
BINLOG_KEY = "00000000000000000003.00000000001234000000.000000"  # source(): mysql-bin.000003, pos 1234, row 0
LSN_KEY = f"{24023128:020d}.{0:020d}.000000"
KAFKA_KEY = "00000000000000000000.00000000000000000009.000000"  # CTX: partition 0, offset 9


def without(doc: dict[str, Any], *names: str) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k not in names}


@pytest.mark.parametrize(
    ("source_doc", "expected"),
    [
        (source(), BINLOG_KEY),
        (source(lsn=24023128), BINLOG_KEY),  # a MySQL stream's lsn is not its space
        (source(connector="MySQL"), BINLOG_KEY),
        (source(connector="mariadb", file="mariadb-bin.000003"), BINLOG_KEY),  # Debezium's MariaDB connector
        ({**PG, "lsn": 24023128}, LSN_KEY),
        ({**PG, "lsn": 24023128, "file": "mysql-bin.000003", "pos": 1234}, LSN_KEY),
        # No position binlake reads for the connector, or no connector: the Kafka order, whatever the fields say.
        (source(connector="sqlserver"), KAFKA_KEY),
        (source(connector="oracle", lsn=24023128), KAFKA_KEY),
        (source(connector=""), KAFKA_KEY),
        (without(source(), "connector"), KAFKA_KEY),
        (without(source(lsn=24023128), "connector", "file"), KAFKA_KEY),
        (oms_source(file="mysql-bin.000003", lsn=5), KAFKA_KEY),
    ],
)
def test_key_space_follows_the_connector_not_the_fields(source_doc: dict[str, Any], expected: str) -> None:
    event = one(change(source=source_doc))
    assert event.order_key == expected
    if "file" in source_doc and source_doc.get("name") != "OMS":  # the binlog fields are filled in any space
        assert (event.source.binlog_file, event.source.binlog_pos) == (source_doc["file"], source_doc["pos"])


@pytest.mark.parametrize(
    ("source_doc", "missing", "space"),
    [
        (without(source(), "file"), "'source.file' is missing or empty", "'mysql' keys this stream by binlog position"),
        (source(file=""), "'source.file' is missing or empty", "binlog position"),
        (without(source(lsn=24023128), "file"), "'source.file'", "binlog position"),  # lsn does not stand in
        (without(source(), "pos"), "'source.pos' is missing or null", "binlog position"),
        (source(connector="mariadb", pos=None), "'source.pos' is missing or null", "'mariadb' keys this stream"),
        (PG, "'source.lsn' is missing or null", "'postgresql' keys this stream by LSN"),
        ({**PG, "file": "mysql-bin.000003", "pos": 1234}, "'source.lsn'", "by LSN"),  # file does not stand in
        ({**PG, "lsn": None}, "'source.lsn'", "by LSN"),
    ],
)
def test_a_change_without_its_connector_position_is_a_reject(
    source_doc: dict[str, Any], missing: str, space: str
) -> None:
    for doc in (change(source=source_doc), change("t", after=None, source=source_doc)):
        error = reject(doc)
        assert error.code == errors.MISSING_FIELD
        assert error.reason.startswith(missing) and space in error.reason
        assert "on every change (a transform must not drop" in error.reason
        assert error.reason.endswith(
            "), or set option order=kafka and rebuild the mirrors fed so far (keys of the two orders do not compare)"
        )
        assert one(doc, KAFKA).order_key == KAFKA_KEY  # the way out the reason names


def test_schema_change_event_follows_its_connector() -> None:
    doc = {"source": source(), "databaseName": "inventory", "ddl": "CREATE TABLE t (id INT)", "tableChanges": []}
    assert one(doc).order_key == BINLOG_KEY
    assert reject({**doc, "source": without(source(), "file")}).code == errors.MISSING_FIELD
    assert one(without(doc, "source")).order_key == KAFKA_KEY  # no connector to say otherwise


@pytest.mark.parametrize("connector", ["mysql", "postgresql", "sqlserver", None])
def test_a_connector_sending_its_position_only_sometimes_never_mixes_key_spaces(connector: str | None) -> None:
    """A stream whose messages carry ``file`` / ``lsn`` on some messages only: every event is keyed in the
    connector's one space (the messages without its position rejected), or all in the Kafka order under
    option order=kafka (and for connectors without a position binlake reads)."""
    base = {"name": "s", "db": "d", "schema": "public", "table": "t", "ts_ms": 5}
    if connector is not None:
        base["connector"] = connector
    sources = [
        {**base, "file": "mysql-bin.000003", "pos": 4, "row": 0},
        {**base, "lsn": 24023128},
        {**base, "file": "mysql-bin.000003", "pos": 90, "lsn": 24023200},
        base,
        {**base, "lsn": 24023300},
        {**base, "file": "mysql-bin.000004", "pos": 4},
    ]
    for options in ({}, {"order": "position"}, {"order": "kafka"}):
        ctx = ParseContext(options=options)
        kafka = options.get("order") == "kafka" or connector not in ("mysql", "postgresql")
        keys: list[str] = []
        rejected: list[int] = []
        for index, source_doc in enumerate(sources):
            outcome = registry.get(FORMAT_ID)(
                json.dumps(change(source=source_doc)).encode(), ctx.at("in", 3, 1000 + index)
            )
            if isinstance(outcome, Rejected):
                assert outcome.code == errors.MISSING_FIELD and "order=kafka" in outcome.reason
                rejected.append(index)
                continue
            keys.extend(event.order_key for event in outcome.events)
        if kafka:
            assert rejected == []
            assert keys == [kafka_key(1000 + index) for index in range(len(sources))]
        elif connector == "mysql":
            assert rejected == [1, 3, 4]
            assert [key.split(".")[0] for key in keys] == [f"{n:020d}" for n in (3, 3, 4)]
        else:
            assert rejected == [0, 3, 5]
            assert [key.split(".")[0] for key in keys] == [f"{n:020d}" for n in (24023128, 24023200, 24023300)]
        assert_strictly_increasing(keys)


def test_order_option_is_checked_at_start() -> None:
    spec = registry.spec(FORMAT_ID)
    for good in ({"order": "kafka"}, {"order": "position"}, {"order": ""}, {"order": "kafka", "primary_key": "id"}):
        spec.check_options(good)
    for bad in ({"order": "lsn"}, {"order": "KAFKA"}, {"order": 1}):
        with pytest.raises(ConfigError, match="bad option"):
            spec.check_options(bad)
    assert "order" in spec.option_docs()
    assert one(change(), ParseContext(topic="t", partition=0, offset=9, options={"order": "position"})).order_key == (
        BINLOG_KEY
    )


# ---------------------------------------------------------------- remembered schemas


def compact(doc: Any) -> bytes:
    """The JsonConverter's layout: no blanks, schema first."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def full_decode(raw: bytes) -> Parsed:
    from binlake.services.debezium_json.parser import parse_document
    from binlake.shared.parsing.jsondoc import decode_exact

    return parse_document(decode_exact(raw), CTX)


def test_a_remembered_schema_reads_messages_exactly_as_the_full_decode() -> None:
    from binlake.services.debezium_json import envelope

    columns: list[dict[str, Any]] = [
        {"type": "int32", "field": "id"},
        {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "3"}, "field": "d"},
        {"type": "string", "field": "s"},
    ]
    first = compact(with_schema(change(after={"id": 1, "d": b64(b"\x01"), "s": "a"}), columns))
    assert envelope.split(first) is None  # not seen yet: the full decode, which remembers the schema
    run(first)
    messages = [
        compact(with_schema(change(after={"id": 2, "d": b64(b"\x02"), "s": 'b,"payload":'}), columns)),
        compact(with_schema(change("d", before={"id": 3, "d": b64(b"\xff"), "s": None}, after=None), columns)),
        # A fractional JSON number (decimal.format=NUMERIC) needs the exact decode: of the payload alone.
        compact(with_schema(change(after={"id": 4, "d": 0, "s": "c"}), columns)).replace(b'"d":0', b'"d":1.250'),
    ]
    for raw in messages:
        assert envelope.split(raw) is not None  # the shortcut is taken...
        assert run(raw) == full_decode(raw)  # ...and reads what the full decode reads
    decimal = one(messages[2]).after
    assert decimal is not None and str(decimal["d"]) == "1.250"
    tombstone = compact(with_schema(change(), columns)).split(b',"payload":')[0] + b',"payload":null}'
    assert envelope.split(tombstone) is not None
    assert run(tombstone).control == "tombstone"


def test_a_message_too_deep_is_refused_with_a_remembered_schema_too() -> None:
    """The depth limit holds whichever way a message is read: a payload nested beyond MAX_DEPTH is malformed
    after its schema was remembered, as the full decode finds it (orjson alone reads up to 1,024 levels)."""
    from binlake.services.debezium_json import envelope
    from binlake.shared.parsing.jsondoc import MAX_DEPTH

    columns = [{"type": "int32", "field": "id"}]
    run(compact(with_schema(change(after={"id": 1}), columns)))  # remembers the schema
    base = compact(with_schema(change(after={"id": 2}), columns))
    levels = MAX_DEPTH + 50
    deep = base[:-2] + b',"x":' + b"[" * levels + b"]" * levels + b"}}"
    assert envelope.split(deep) is not None  # the shortcut's layout
    refused = reject(deep)
    assert refused.code == errors.MALFORMED
    assert f"nests deeper than {MAX_DEPTH} levels" in str(refused)


def test_other_layouts_take_the_full_decode() -> None:
    from binlake.services.debezium_json import envelope

    columns = [{"type": "int32", "field": "id"}]
    run(compact(with_schema(change(), columns)))
    base = compact(with_schema(change(after={"id": 5}), columns))
    extra_key = base[:-1] + b',"extra":1}'
    assert one(extra_key).after == {"id": 5}  # the payload bytes alone are no JSON value: full decode
    repeated = base[:-1] + b',"payload":null}'
    assert run(repeated) == full_decode(repeated)  # the last payload wins, as in the full decode
    spaced = json.dumps(with_schema(change(after={"id": 6}), columns)).encode()
    assert envelope.split(spaced) is None
    run(spaced)
    assert envelope.split(spaced) is None  # nothing remembered for other layouts
    assert one(spaced).after == {"id": 6}


def test_schemas_with_fractional_numbers_are_not_remembered() -> None:
    from binlake.services.debezium_json import envelope

    columns = [{"type": "double", "field": "x", "default": 1.5}]
    raw = compact(with_schema(change(after={"x": 2.5}), columns))
    run(raw)
    split = envelope.split(raw)
    assert split is not None and split[0].doc is None  # remembered as unfit: always the full decode
    event = one(raw)
    assert event.after == {"x": 2.5}
