"""ckafka-v1: Tencent CKafka "官方格式一" DML plus Canal-shaped DDL."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.ckafka_v1.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt
from binlake.shared.parsing import errors
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import RejectError
from binlake.shared.parsing.result import Parsed
from tests.support.order_support import FIRST_OFFSET, assert_strictly_increasing, kafka_key, keys_in_input_order

SHANGHAI = ParseContext(topic="t", partition=1, offset=42, source_timezone=ZoneInfo("Asia/Shanghai"))


def dml(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "BINLOG_NAME": "mysql-bin.000003",
        "BINLOG_POS": 484,
        "DATABASE": "inventory",
        "EVENT_SERVER_ID": None,
        "GLOBAL_ID": None,
        "GROUP_ID": None,
        "NEW_VALUES": {"id": "1004", "first_name": "Anne Marie", "email": "a@x.org"},
        "OLD_VALUES": {"id": "1004", "first_name": "Anne", "email": "a@x.org"},
        "TABLE": "customers",
        "TIME": "20160611015029",
        "TYPE": "U",
    }
    doc.update(overrides)
    return doc


def one(doc: Any, ctx: ParseContext = SHANGHAI) -> ChangeEvent:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc, ensure_ascii=False).encode()
    parsed = parse(raw, ctx)
    assert isinstance(parsed, Parsed)
    assert len(parsed.events) == 1
    return parsed.events[0]


def reject(doc: Any, ctx: ParseContext = SHANGHAI) -> RejectError:
    raw = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    with pytest.raises(RejectError) as info:
        parse(raw, ctx)
    return info.value


@pytest.mark.unit
def test_module_constants() -> None:
    assert FORMAT_ID == "ckafka-v1"
    assert PARSER_VERSION == "1"


@pytest.mark.unit
def test_update_images_changed_columns_and_source() -> None:
    event = one(dml(GLOBAL_ID="uuid:23"))
    assert event.op == "UPDATE"
    assert event.before == {"id": "1004", "first_name": "Anne", "email": "a@x.org"}
    assert event.after == {"id": "1004", "first_name": "Anne Marie", "email": "a@x.org"}
    assert event.changed_columns == ["first_name"]
    assert event.primary_key == []
    assert all(column.inferred and column.source_type is None for column in event.columns)
    assert [column.name for column in event.columns] == ["id", "first_name", "email"]
    src = event.source
    assert (src.format, src.db_type, src.database, src.table) == ("ckafka-v1", "MYSQL", "inventory", "customers")
    assert (src.binlog_file, src.binlog_pos, src.gtid) == ("mysql-bin.000003", 484, "uuid:23")
    assert (event.origin.topic, event.origin.partition, event.origin.offset, event.origin.row) == ("t", 1, 42, 0)


@pytest.mark.unit
def test_time_is_a_wall_clock_in_the_source_zone() -> None:
    # 2016-06-11 01:50:29 at UTC+8 is 2016-06-10T17:50:29Z.
    assert one(dml()).ts_ms == 1_465_581_029_000
    assert one(dml(), ParseContext()).ts_ms == 1_465_581_029_000 + 8 * 3_600_000
    assert one(dml(TIME="19700101080000")).ts_ms == 0  # the published insert sample
    assert one(dml(TIME=None)).ts_ms is None
    assert one(dml(TIME=20160611015029)).ts_ms == 1_465_581_029_000  # a JSON number is read as its digits
    assert reject(dml(TIME="2016-06-11")).code == errors.BAD_FIELD
    assert reject(dml(TIME="20161311015029")).code == errors.BAD_FIELD  # month 13


@pytest.mark.unit
@pytest.mark.parametrize(("kind", "op"), [("I", "INSERT"), ("i", "INSERT"), ("l", "INSERT"), ("D", "DELETE")])
def test_insert_spellings_and_delete(kind: str, op: str) -> None:
    row = {"id": "1", "name": None}
    if op == "INSERT":
        event = one(dml(TYPE=kind, NEW_VALUES=row, OLD_VALUES=None))
        assert (event.before, event.after) == (None, row)
    else:
        event = one(dml(TYPE=kind, NEW_VALUES=None, OLD_VALUES=row))
        assert (event.before, event.after) == (row, None)
    assert event.op == op
    assert event.changed_columns is None
    assert {c.name: c.logical_type for c in event.columns} == {"id": "string", "name": "unknown"}


@pytest.mark.unit
def test_changed_columns_compare_kind_and_skip_unknown() -> None:
    event = one(
        dml(
            NEW_VALUES={"a": "1", "b": 1, "c": None, "d": "same", "e": "new-only"},
            OLD_VALUES={"a": 1, "b": 1, "c": "x", "d": "same"},
        )
    )
    # "1" vs 1 differ in kind; e is absent from OLD_VALUES so its change is unknown.
    assert event.changed_columns == ["a", "c"]
    assert event.before is not None and "e" not in event.before


@pytest.mark.unit
def test_json_numbers_stay_exact() -> None:
    raw = (
        b'{"BINLOG_NAME": "mysql-bin.000001", "BINLOG_POS": 4, "DATABASE": "d", "TABLE": "t", "TYPE": "I",'
        b' "TIME": "20200101000000", "NEW_VALUES": {"u": 18446744073709551615, "m": 0.1000000000000000055511151231}}'
    )
    event = one(raw)
    assert event.after is not None
    assert isinstance(event.after["u"], BigInt) and event.after["u"] == 2**64 - 1
    assert event.after["m"] == Decimal("0.1000000000000000055511151231")
    assert {c.name: c.logical_type for c in event.columns} == {"u": "integer", "m": "decimal"}


@pytest.mark.unit
def test_order_key_is_the_input_kafka_order() -> None:
    assert (
        one(dml()).order_key == "00000000000000000001.00000000000000000042.000000"
    )  # SHANGHAI: partition 1, offset 42
    event = one(dml(BINLOG_NAME="binlog", BINLOG_POS=7))  # no sequence number: no longer needed, kept verbatim
    assert (event.source.binlog_file, event.source.binlog_pos) == ("binlog", 7)


def _truncate(es: int) -> dict[str, Any]:
    return {"data": None, "database": "inventory", "es": es, "id": 0, "isDdl": True, "old": None, "pkNames": None,
            "table": "customers", "type": "TRUNCATE", "sql": "truncate table customers"}  # fmt: skip


@pytest.mark.unit
def test_issue16_ddl_and_dml_share_one_key_space() -> None:
    # Before: DML keyed by binlog (3, pos), DDL by (es ms, id): the TRUNCATE sorted after the rows
    # written after it, which then looked older than it and were dropped by the sink.
    keys = keys_in_input_order(
        parse, [dml(BINLOG_POS=100), _truncate(1655812326), dml(TYPE="I", OLD_VALUES=None, BINLOG_POS=200)]
    )
    assert_strictly_increasing(keys)


@pytest.mark.unit
def test_issue16_same_row_same_second_and_earlier_time_later_keep_input_order() -> None:
    # Two changes of one row in one second; then a DDL whose es is earlier than the rows before it.
    same_second = [dml(BINLOG_POS=900), dml(BINLOG_POS=900), dml(TIME="20160611015029", BINLOG_POS=901)]
    keys = keys_in_input_order(parse, [*same_second, _truncate(1000), dml(TIME="19700101080000")])
    assert_strictly_increasing(keys)
    assert keys[0] == kafka_key(FIRST_OFFSET)


@pytest.mark.unit
def test_canal_shaped_ddl_seconds_and_millis() -> None:
    base = {"data": None, "database": "dip_test", "id": 0, "isDdl": True, "old": None, "pkNames": None}
    create = one({**base, "es": 1655812326, "ts": 1655812326, "table": "", "type": "QUERY", "sql": "CREATE DATABASE x"})
    assert create.op == "DDL"
    assert create.ddl is not None and create.ddl.kind == "CREATE_DATABASE"
    assert create.source.table is None
    assert create.source.format == "ckafka-v1"
    assert create.ts_ms == 1_655_812_326_000
    rename = one(
        {**base, "es": 1656300979748, "ts": 1656300979748, "table": "t", "type": "RENAME", "sql": "rename table a to t"}
    )
    assert rename.ts_ms == 1_656_300_979_748
    assert rename.ddl is not None and rename.ddl.kind == "RENAME_TABLE"
    truncate = one({**base, "es": 1, "table": "t", "type": "TRUNCATE", "sql": "truncate table t"})
    assert truncate.op == "TRUNCATE"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("doc", "code", "fragment"),
    [
        ({"type": "INSERT", "isDdl": False, "data": [{"id": "1"}], "table": "t"}, errors.WRONG_FORMAT, "Canal flat"),
        ({"type": "UPDATE", "data": [{"id": "1"}], "sql": "", "table": "t"}, errors.WRONG_FORMAT, "Canal flat"),
        ({"op": "c", "after": {"id": 1}}, errors.WRONG_FORMAT, "neither"),
        ([1, 2], errors.WRONG_FORMAT, "JSON object"),
        ("I", errors.WRONG_FORMAT, "JSON object"),
        (dml(TYPE=None), errors.MISSING_FIELD, "'TYPE'"),
        (dml(TYPE=1), errors.BAD_FIELD, "'TYPE'"),
        (dml(TYPE="X"), errors.UNSUPPORTED, "'X'"),
        (dml(BINLOG_NAME=None), errors.MISSING_FIELD, "BINLOG_NAME"),
        (dml(BINLOG_POS="12a"), errors.BAD_FIELD, "BINLOG_POS"),
        (dml(BINLOG_POS=-1), errors.BAD_FIELD, "64-bit position"),
        (dml(BINLOG_POS=2**63), errors.BAD_FIELD, "64-bit position"),
        (dml(DATABASE=None), errors.MISSING_FIELD, "DATABASE"),
        (dml(TABLE=""), errors.MISSING_FIELD, "TABLE"),
        (dml(OLD_VALUES=None), errors.MISSING_FIELD, "OLD_VALUES"),
        (dml(NEW_VALUES="{}"), errors.BAD_FIELD, "NEW_VALUES"),
        (dml(TYPE="I", OLD_VALUES={"id": "1"}), errors.INCONSISTENT, "OLD_VALUES"),
        (dml(TYPE="D", NEW_VALUES={"id": "1"}), errors.INCONSISTENT, "NEW_VALUES"),
        (dml(TYPE="I", NEW_VALUES=None, OLD_VALUES=None), errors.MISSING_FIELD, "NEW_VALUES"),
        (dml(GLOBAL_ID=["x"]), errors.BAD_FIELD, "GLOBAL_ID"),
        ({"isDdl": True, "type": "ALTER", "sql": None}, errors.MISSING_FIELD, "sql"),
    ],
)
def test_rejects(doc: Any, code: str, fragment: str) -> None:
    error = reject(doc)
    assert error.code == code, error.reason
    assert fragment in error.reason


@pytest.mark.unit
def test_malformed_bytes() -> None:
    assert reject(b"\xff\xfe{").code == errors.MALFORMED
    assert reject(b'{"TYPE": "I",').code == errors.MALFORMED


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)
_FIELDS = st.sampled_from(
    ["TYPE", "BINLOG_NAME", "BINLOG_POS", "DATABASE", "TABLE", "TIME", "NEW_VALUES", "OLD_VALUES", "GLOBAL_ID",
     "isDdl", "type", "sql", "es", "ts", "id", "mysqlType", "pkNames", "table"]
)  # fmt: skip


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(field=_FIELDS, value=_JSON, ddl=st.booleans())
def test_any_field_value_is_parsed_or_rejected(field: str, value: Any, ddl: bool) -> None:
    doc: dict[str, Any] = (
        {"isDdl": True, "type": "ALTER", "sql": "alter table t add c int", "es": 1, "table": "t"} if ddl else dml()
    )
    doc[field] = value
    try:
        parse(json.dumps(doc).encode(), SHANGHAI)
    except RejectError as exc:
        assert exc.code in errors.REJECT_CODES


@pytest.mark.unit
@settings(max_examples=200, deadline=None)
@given(raw=st.binary(max_size=64))
def test_random_bytes_never_crash(raw: bytes) -> None:
    try:
        parse(raw, SHANGHAI)
    except RejectError as exc:
        assert exc.code in errors.REJECT_CODES
