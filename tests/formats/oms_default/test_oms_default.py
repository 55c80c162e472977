"""OceanBase OMS Default / DefaultExtendColumnType parser: typing, ops, order keys, rejects."""

from __future__ import annotations

import datetime as _dt
import json
from decimal import Decimal
from typing import Any

import pytest

from binlake.services.oms_default.parser import parse_default, parse_extend_column_type
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt, SqlTime, Unparsed
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.errors import RejectError
from binlake.shared.parsing.result import Heartbeat, Parsed
from tests.support.order_support import assert_strictly_increasing, kafka_key, keys_in_input_order

CTX = ParseContext(topic="t", partition=1, offset=42)
HUGE = (
    "9.99999999999999909326625337248461995470488734032045693707225049331647881341002217023668530611028595157578"
    "301758491822824378438792553200763769833775473829862512856683413461939989729065436937279228852476622948659"
    "1679434355441E-308"
)


def meta(**fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "checkpoint": "1609344671",
        "record_primary_key": "id",
        "record_primary_value": "3",
        "source_identity": None,
        "dbType": "OB_MYSQL",
        "table_name": "orders",
        "db": "tenant.shop",
        "timestamp": "1609344671",
        "uniqueId": "trx-1",
    }
    base.update(fields)
    return base


def message(kind: str, prev: Any = None, post: Any = None, **meta_fields: Any) -> bytes:
    doc = {"allMetaData": meta(**meta_fields), "prevStruct": prev, "postStruct": post, "recordType": kind}
    return json.dumps(doc).encode()


def one(parsed: Parsed) -> ChangeEvent:
    assert len(parsed.events) == 1
    return parsed.events[0]


def rejected(raw: bytes, extend: bool = False) -> RejectError:
    with pytest.raises(RejectError) as info:
        (parse_extend_column_type if extend else parse_default)(raw, CTX)
    return info.value


@pytest.mark.unit
def test_untyped_values_are_exact_and_strings_stay_strings() -> None:
    raw = (
        b'{"allMetaData": {"record_primary_key": "id", "dbType": "OB_MYSQL", "table_name": "t",'
        b' "db": "ten.db", "timestamp": "1609344671"}, "prevStruct": null, "recordType": "INSERT",'
        b' "postStruct": {"id": 3, "u": 10223372036854775806, "d": 1.2222, "z": 0.10, "h": ' + HUGE.encode() + b","
        b' "day": "2020-11-25", "ts": "1606233662.012345", "b64": "aGVsbG8gd29ybGQ=", "n": null}}'
    )
    event = one(parse_default(raw, CTX))
    after = event.after
    assert after is not None
    assert after["id"] == 3 and type(after["id"]) is int
    assert isinstance(after["u"], BigInt) and after["u"] == 10223372036854775806
    assert after["d"] == Decimal("1.2222") and isinstance(after["d"], Decimal)
    assert str(after["z"]) == "0.10"  # digits as sent, never through float
    assert after["h"] == Decimal(HUGE) and str(after["h"]) == HUGE
    assert after["day"] == "2020-11-25" and after["ts"] == "1606233662.012345" and after["b64"] == "aGVsbG8gd29ybGQ="
    assert after["n"] is None
    assert all(column.inferred and column.source_type is None for column in event.columns)
    logical = {column.name: column.logical_type for column in event.columns}
    assert logical == {
        "id": "int64",
        "u": "integer",
        "d": "decimal",
        "z": "decimal",
        "h": "decimal",
        "day": "string",
        "ts": "string",
        "b64": "string",
        "n": "unknown",
    }


@pytest.mark.unit
def test_source_fields_and_tenant_split() -> None:
    event = one(parse_default(message("INSERT", post={"id": 1}, storeDataSequence=160934467112300004), CTX))
    src = event.source
    assert (src.format, src.db_type, src.tenant, src.database, src.schema, src.table) == (
        "oms-default",
        "OB_MYSQL",
        "tenant",
        "shop",
        None,
        "orders",
    )
    assert src.sequence == "160934467112300004"
    assert src.transaction_id == "trx-1" and src.checkpoint == "1609344671"
    assert event.ts_ms == 1609344671000 and event.ingest_ts_ms is None
    assert event.order_key == kafka_key(42, partition=1)  # storeDataSequence is not a log position
    assert (event.origin.topic, event.origin.partition, event.origin.offset, event.origin.row) == ("t", 1, 42, 0)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("db_type", "db", "expected"),
    [
        ("MYSQL", "shop", (None, "shop", None)),
        ("MYSQL", "a.b", (None, "a.b", None)),  # only OceanBase prefixes a tenant
        ("OB_MYSQL", "shop", (None, "shop", None)),
        ("OCEANBASE", "t.shop", ("t", "shop", None)),
        ("OB_ORACLE", "t.APP", ("t", None, "APP")),
        ("ORACLE", "APP", (None, None, "APP")),
        ("DB2_LUW", "SCH", (None, None, "SCH")),
    ],
)
def test_db_names(db_type: str, db: str, expected: tuple[str | None, str | None, str | None]) -> None:
    src = one(parse_default(message("INSERT", post={"id": 1}, dbType=db_type, db=db), CTX)).source
    assert (src.tenant, src.database, src.schema) == expected


@pytest.mark.unit
def test_op_mapping_update_and_delete() -> None:
    update = one(parse_default(message("UPDATE", prev={"id": 1, "v": "a"}, post={"id": 1, "v": "b"}), CTX))
    assert update.op == "UPDATE"
    assert update.before == {"id": 1, "v": "a"} and update.after == {"id": 1, "v": "b"}
    assert update.changed_columns is None  # OMS does not say what changed
    assert update.primary_key == ["id"]
    delete = one(parse_default(message("DELETE", prev={"id": 1, "v": "a"}), CTX))
    assert delete.op == "DELETE" and delete.after is None and delete.before == {"id": 1, "v": "a"}
    insert = one(parse_default(message("insert", post={"id": 2}), CTX))
    assert insert.op == "INSERT" and insert.before is None


@pytest.mark.unit
def test_composite_key_and_missing_key_column() -> None:
    event = one(parse_default(message("INSERT", post={"a": 1, "b": 2}, record_primary_key="a\u0001b"), CTX))
    assert event.primary_key == ["a", "b"]
    error = rejected(message("INSERT", post={"col1": 1}, record_primary_key="id1\u0001id2"))
    assert error.code == "inconsistent" and "['id1', 'id2']" in error.reason
    no_key = one(parse_default(message("DELETE", prev={"x": 1}, record_primary_key=None), CTX))
    assert no_key.primary_key == []


@pytest.mark.unit
def test_ddl_and_truncate() -> None:
    ddl = one(parse_default(message("DDL", post={"ddl": "ALTER TABLE t ADD c INT"}, ddlType="ALTER_TABLE"), CTX))
    assert ddl.op == "DDL" and ddl.ddl is not None and ddl.ddl.kind == "ALTER_TABLE"
    assert ddl.ddl.sql == "ALTER TABLE t ADD c INT" and ddl.before is None and ddl.after is None
    truncate = one(parse_default(message("DDL", post={"ddl": "truncate table t"}, ddlType="TRUNCATE"), CTX))
    assert truncate.op == "TRUNCATE"


@pytest.mark.unit
def test_heartbeat_is_no_event() -> None:
    parsed = parse_default(message("HEARTBEAT", timestamp="1671177300"), CTX)
    assert parsed.events == [] and parsed.control == "heartbeat"
    assert parsed.heartbeats == [Heartbeat(1671177300000, "shop.orders")]
    by_checkpoint = parse_default(message("HEARTBEAT", timestamp=None, checkpoint="1671177000", table_name=None), CTX)
    assert by_checkpoint.heartbeats == [Heartbeat(1671177000000, None)]


@pytest.mark.unit
@pytest.mark.parametrize("parse", [parse_default, parse_extend_column_type])
def test_issue16_same_second_earlier_time_and_mixed_sequences_keep_input_order(parse: Any) -> None:
    # Before: storeDataSequence, else timestamp (s) * 10^8, else 0: a row's changes in one second
    # without a sequence tied, an earlier timestamp at a later offset sorted first, a message with
    # a sequence compared with one without on another scale, and the DDL (sequence null) too.
    update = {"prev": {"id": 1, "v": "a"}, "post": {"id": 1, "v": "b"}}
    messages = [
        message("UPDATE", **update),
        message("UPDATE", **update),
        message("UPDATE", **update, timestamp="1609344000"),
        message("UPDATE", **update, storeDataSequence="160934467100000001"),
        message("UPDATE", **update),
        message("DDL", post={"ddl": "truncate table orders"}, storeDataSequence=None, timestamp="1"),
        message("INSERT", post={"id": 1}, storeDataSequence=None, timestamp=None, checkpoint="id:1"),
    ]
    assert_strictly_increasing(keys_in_input_order(parse, messages))


@pytest.mark.unit
def test_extend_types_columns_named_in_light_type() -> None:
    light = {
        "i": {"schemaType": "INT64"},
        "big": {"schemaType": "BIGINT"},
        "dec": {"schemaType": "DECIMAL"},
        "raw": {"schemaType": "BLOB"},
        "day": {"schemaType": "DATE"},
        "clock": {"schemaType": "TIME"},
        "local": {"schemaType": "DATETIME"},
        "ts": {"schemaType": "TIMESTAMP"},
        "bad_day": {"schemaType": "DATE"},
        "ghost": {"schemaType": "VARCHAR"},
    }
    post = {
        "i": 9223372036854775806,
        "big": 18446744073709551616,
        "dec": 12345.678901234567,
        "raw": "AP8=",
        "day": "2020-11-25",
        "clock": "00:01:02.5",
        "local": "2020-11-25 00:01:02.012345678 Asia/Shanghai",
        "ts": "1606233662.012345",
        "bad_day": "2020-02-30",
        "free": 1.5,
        "__light_type": light,
    }
    event = one(parse_extend_column_type(message("INSERT", post=post, record_primary_key="i"), CTX))
    after = event.after
    assert after is not None
    assert "__light_type" not in after and "ghost" not in after
    assert after["i"] == 9223372036854775806 and not isinstance(after["i"], BigInt)
    assert isinstance(after["big"], BigInt) and after["big"] == 2**64
    assert after["dec"] == Decimal("12345.678901234567")  # exact digits, not the nearest double
    assert after["raw"] == b"\x00\xff"
    assert after["day"] == _dt.date(2020, 11, 25)
    assert after["clock"] == SqlTime(62_500_000)
    assert after["local"] == _dt.datetime(2020, 11, 25, 0, 1, 2, 12345)  # wall clock, zone id dropped
    assert after["ts"] == _dt.datetime(2020, 11, 24, 16, 1, 2, 12345, tzinfo=_dt.UTC)
    assert after["bad_day"] == Unparsed("2020-02-30")
    assert after["free"] == Decimal("1.5")
    columns = {column.name: column for column in event.columns}
    assert "ghost" not in columns and "__light_type" not in columns
    assert (columns["big"].source_type, columns["big"].logical_type, columns["big"].inferred) == (
        "BIGINT",
        "integer",
        False,
    )
    assert columns["i"].logical_type == "int64" and columns["local"].logical_type == "datetime"
    assert columns["ts"].logical_type == "timestamp" and columns["raw"].logical_type == "bytes"
    assert columns["free"].inferred and columns["free"].logical_type == "decimal"


@pytest.mark.unit
def test_extend_published_light_type_names_do_not_type_the_image() -> None:
    post = {"col1": 3, "col9": "aGVsbG8gd29ybGQ=", "__light_type": {"int8": {"schemaType": "TINYINT"}}}
    event = one(parse_extend_column_type(message("INSERT", post=post, record_primary_key="col1"), CTX))
    assert event.after == {"col1": 3, "col9": "aGVsbG8gd29ybGQ="}
    assert [(c.name, c.inferred) for c in event.columns] == [("col1", True), ("col9", True)]


@pytest.mark.unit
def test_extend_oracle_date_is_a_date_time() -> None:
    prev = {"ID": 1, "D": "2023-11-14 22:13:20", "__light_type": {"D": {"schemaType": "DATE"}}}
    raw = message("DELETE", prev=prev, record_primary_key="ID", dbType="OB_ORACLE", db="t.APP")
    event = one(parse_extend_column_type(raw, CTX))
    assert event.before is not None and event.before["D"] == _dt.datetime(2023, 11, 14, 22, 13, 20)
    assert event.source.schema == "APP" and event.source.format == "oms-extend-column-type"


@pytest.mark.unit
def test_extend_timestamp_wall_clock_in_source_zone() -> None:
    post = {"id": 1, "ts": "2020-11-25 00:01:02", "__light_type": {"ts": {"schemaType": "TIMESTAMP"}}}
    ctx = ParseContext(source_timezone=zone("Asia/Shanghai"))
    event = one(parse_extend_column_type(message("INSERT", post=post), ctx))
    assert event.after is not None and event.after["ts"] == _dt.datetime(2020, 11, 24, 16, 1, 2, tzinfo=_dt.UTC)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raw", "extend", "code", "reason"),
    [
        (b"\xff\xfe", False, "malformed", "invalid"),
        (b'{"a": 1,}', False, "malformed", "invalid JSON"),
        (b"[]", False, "wrong_format", "OMS Default"),
        (b"42", True, "wrong_format", "OMS Default"),
        (b'{"data": [{"id": "1"}], "type": "INSERT"}', False, "wrong_format", "OMS Default"),
        (b'{"recordType": "INSERT", "allMetaData": []}', False, "bad_field", "allMetaData"),
        (b'{"recordType": 5, "allMetaData": {}}', False, "bad_field", "recordType"),
        (message("INSERT", post={"id": 1}, timestamp=[1]), False, "bad_field", "timestamp"),
        (message("INSERT", post={"id": 1}, db={"x": 1}), False, "bad_field", "db"),
        (message("INSERT", post={"id": 1}, record_primary_key="id\u0001"), False, "bad_field", "empty column"),
        (message("DELETE", post={"id": 1}), False, "missing_field", "prevStruct"),
        (message("UPDATE", prev={"id": 1}), False, "missing_field", "postStruct"),
        (message("UPSERT", post={"id": 1}), False, "unsupported", "UPSERT"),
        (message("DDL", post={"ddl": 5}), False, "missing_field", "ddl"),
        (message("INSERT", post={"id": 1, "__light_type": None}), False, "wrong_format", "extend"),
        (message("INSERT", post={"id": "x", "__light_type": {"id": {"schemaType": "INT"}}}), True, "bad_value", "'id'"),
        (message("INSERT", post={"id": 1, "__light_type": {"id": "INT"}}), True, "bad_field", "schemaType"),
        (
            message("INSERT", post={"d": "soon", "__light_type": {"d": {"schemaType": "DATETIME"}}}),
            True,
            "bad_value",
            "'d'",
        ),
    ],
)
def test_rejects(raw: bytes, extend: bool, code: str, reason: str) -> None:
    error = rejected(raw, extend)
    assert error.code == code, error.reason
    assert reason in error.reason
