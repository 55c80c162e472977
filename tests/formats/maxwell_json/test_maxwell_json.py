"""maxwell-json: value typing, op mapping, order keys, control messages and rejects."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.maxwell_json.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.errors import ConfigError
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import REJECT_CODES, RejectError
from binlake.shared.parsing.result import Parsed, Rejected
from tests.support.order_support import (
    FIRST_OFFSET,
    PARTITION,
    assert_strictly_increasing,
    kafka_key,
    keys_in_input_order,
)

CTX = ParseContext(topic="t", partition=1, offset=7)
BY_POSITION = ParseContext(topic="t", partition=1, offset=7, options={"order": "position"})


def _msg(**fields: Any) -> bytes:
    base: dict[str, Any] = {"database": "shop", "table": "orders", "type": "insert", "ts": 1700000000}
    base.update(fields)
    return json.dumps(base).encode()


def _one(raw: bytes, ctx: ParseContext = CTX) -> ChangeEvent:
    parsed = parse(raw, ctx)
    assert len(parsed.events) == 1
    return parsed.events[0]


def _reject(raw: bytes, ctx: ParseContext = CTX) -> RejectError:
    with pytest.raises(RejectError) as info:
        parse(raw, ctx)
    return info.value


@pytest.mark.unit
def test_module_constants_and_registry() -> None:
    assert FORMAT_ID == "maxwell-json"
    assert PARSER_VERSION == "1"
    assert registry.get("maxwell-json").parse is parse


@pytest.mark.unit
def test_insert_values_are_inferred_exactly() -> None:
    raw = (
        b'{"database":"d","table":"t","type":"insert","ts":1477053217,"data":{"id":18446744073709551615,'
        b'"m":4.2341,"c":"2016-10-21 05:33:37.523000","blob":"AAEC/w==","flag":true,"n":null,'
        b'"doc":{"k":1.10,"big":123456789012345678901234},"set":["a","b"]}}'
    )
    event = _one(raw)
    assert event.op == "INSERT"
    assert event.before is None and event.after is not None
    after = event.after
    assert isinstance(after["id"], BigInt) and after["id"] == 2**64 - 1
    assert after["m"] == Decimal("4.2341") and isinstance(after["m"], Decimal)
    assert after["c"] == "2016-10-21 05:33:37.523000"  # untyped: stays the string Maxwell wrote
    assert after["blob"] == "AAEC/w=="  # base64 cannot be told from text without a type
    assert after["flag"] is True
    assert "n" in after and after["n"] is None
    assert after["doc"] == '{"k":1.10,"big":123456789012345678901234}'
    assert after["set"] == '["a","b"]'
    assert all(column.inferred and column.source_type is None for column in event.columns)
    logical = {column.name: column.logical_type for column in event.columns}
    assert logical == {
        "id": "integer",
        "m": "decimal",
        "c": "string",
        "blob": "string",
        "flag": "boolean",
        "n": "unknown",
        "doc": "string",
        "set": "string",
    }
    assert event.ts_ms == 1477053217000
    assert event.source.db_type == "MYSQL"
    assert (event.origin.topic, event.origin.partition, event.origin.offset, event.origin.row) == ("t", 1, 7, 0)


@pytest.mark.unit
def test_update_overlays_old_and_lists_changed_columns() -> None:
    event = _one(
        _msg(
            type="update",
            primary_key_columns=["id"],
            data={"id": 1, "m": 5, "c": "x"},
            old={"m": 4, "c": None},
        )
    )
    assert event.op == "UPDATE"
    assert event.after == {"id": 1, "m": 5, "c": "x"}
    assert event.before == {"id": 1, "m": 4, "c": None}
    assert event.changed_columns == ["m", "c"]
    assert event.primary_key == ["id"]


@pytest.mark.unit
def test_update_without_old_has_unknown_before() -> None:
    event = _one(_msg(type="update", data={"id": 1, "m": 5}))
    assert event.before is None
    assert event.changed_columns is None


@pytest.mark.unit
@pytest.mark.parametrize(("kind", "op"), [("insert", "INSERT"), ("delete", "DELETE"), ("bootstrap-insert", "SNAPSHOT")])
def test_op_mapping(kind: str, op: str) -> None:
    event = _one(_msg(type=kind, data={"id": 1}))
    assert event.op == op
    if op == "DELETE":
        assert event.before == {"id": 1} and event.after is None
    else:
        assert event.after == {"id": 1} and event.before is None


@pytest.mark.unit
def test_control_messages_and_heartbeat() -> None:
    start = parse(_msg(type="bootstrap-start", data={}), CTX)
    assert start.events == [] and start.control == "bootstrap_start"
    done = parse(_msg(type="bootstrap-complete", data={}), CTX)
    assert done.events == [] and done.control == "bootstrap_complete"
    beat = parse(b'{"database":"maxwell","table":"heartbeats","type":"heartbeat","ts":1700000011}', CTX)
    assert beat.events == [] and beat.control == "heartbeat"
    assert beat.heartbeats[0].ts_ms == 1700000011000
    assert beat.heartbeats[0].table == "maxwell.heartbeats"


@pytest.mark.unit
def test_ddl_event() -> None:
    raw = (
        b'{"type":"table-alter","database":"test","table":"e","ts":1477053308000,'
        b'"sql":"alter table test.e add column torvalds bigint unsigned after m","position":"master.000006:804398"}'
    )
    event = _one(raw)
    assert event.op == "DDL"
    assert event.ddl is not None and event.ddl.kind == "ALTER_TABLE"
    assert event.ts_ms == 1477053308000  # DDL ts is already milliseconds
    assert event.source.binlog_file == "master.000006" and event.source.binlog_pos == 804398
    truncate = _one(_msg(type="table-alter", sql="TRUNCATE TABLE orders", ts=1700000000000))
    assert truncate.op == "TRUNCATE"


@pytest.mark.unit
def test_order_key_with_position_keeps_transaction_row_order() -> None:
    first = _one(_msg(xid=5, xoffset=0, position="mysql-bin.000042:1544", data={"id": 1}), BY_POSITION)
    second = _one(_msg(xid=5, xoffset=1, position="mysql-bin.000042:1544", data={"id": 2}), BY_POSITION)
    commit = _one(_msg(xid=5, commit=True, position="mysql-bin.000042:1544", data={"id": 3}), BY_POSITION)
    later = _one(_msg(xid=6, commit=True, position="mysql-bin.000042:2000", data={"id": 4}), BY_POSITION)
    next_file = _one(_msg(xid=7, commit=True, position="mysql-bin.000043:4", data={"id": 5}), BY_POSITION)
    keys = [e.order_key for e in (first, second, commit, later, next_file)]
    assert keys == sorted(keys) and len(set(keys)) == 5
    assert first.order_key == "00000000000000000042.00000015440000000000.000000"
    assert commit.order_key == "00000000000000000042.00000015449999999999.000000"
    assert first.source.transaction_id == "5"


@pytest.mark.unit
def test_order_key_without_position_is_the_input_kafka_order() -> None:
    assert _one(_msg(ts=1700000000, xid=10, data={"id": 1})).order_key == kafka_key(7, partition=1)
    huge_xid = _one(_msg(ts=1700000000, xid=2**64 - 1, commit=True, data={"id": 1}))
    assert huge_xid.source.transaction_id == str(2**64 - 1)


@pytest.mark.unit
def test_default_order_is_kafka_whatever_position_says() -> None:
    """Option order unset (or ``kafka``, or empty): the input's Kafka order for every message; a
    ``position`` only fills the source fields, even one whose file name has no sequence number."""
    for order in (None, "kafka", ""):
        ctx = ParseContext(topic="t", partition=1, offset=7, options={} if order is None else {"order": order})
        row = _one(_msg(xid=5, commit=True, position="mysql-bin.000042:1544", data={"id": 1}), ctx)
        assert row.order_key == kafka_key(7, partition=1)
        assert (row.source.binlog_file, row.source.binlog_pos) == ("mysql-bin.000042", 1544)
        ddl = _one(_msg(type="table-drop", ts=1700000000000, sql="drop table t", position="f.7:9"), ctx)
        assert ddl.order_key == kafka_key(7, partition=1)
        nameless = _one(_msg(position="binlog:4", data={"id": 1}), ctx)
        assert nameless.order_key == kafka_key(7, partition=1)
        assert nameless.source.binlog_file == "binlog"
    # A malformed position is still a reject: it would fill the source fields.
    assert _reject(_msg(data={"id": 1}, position="nofile")).code == "bad_field"


@pytest.mark.unit
def test_order_position_rejects_every_event_without_position() -> None:
    """order=position: a row, a bootstrap row or a DDL without ``position`` is a reject saying what to do;
    messages that make no event (heartbeats, bootstrap framing) are read as ever."""
    without = [
        _msg(data={"id": 1}),
        _msg(type="bootstrap-insert", data={"id": 1}),
        _msg(type="update", data={"id": 1}, old={"id": 0}),
        _msg(type="table-create", ts=1700000000000, sql="create table t (id int)"),
    ]
    for raw in without:
        error = _reject(raw, BY_POSITION)
        assert error.code == "missing_field"
        assert error.reason == (
            "no 'position' field, and option order=position keys this stream by binlog position: turn Maxwell's "
            "output_binlog_position back on, or set order=kafka and rebuild the mirrors fed so far (keys of the "
            "two orders do not compare)"
        )
    assert parse(_msg(type="heartbeat", ts=1700000000000), BY_POSITION).control == "heartbeat"
    assert parse(_msg(type="bootstrap-start", data={}), BY_POSITION).control == "bootstrap_start"
    # A file name without a sequence number cannot be a binlog key.
    assert _reject(_msg(data={"id": 1}, position="binlog:4"), BY_POSITION).code == "bad_field"
    snapshot = _one(_msg(type="bootstrap-insert", position="mysql-bin.000042:1544", data={"id": 1}), BY_POSITION)
    assert snapshot.order_key == "00000000000000000042.00000015440000000000.000000"


def _switching_stream() -> list[bytes]:
    """output_binlog_position on, turned off mid-stream, then on again (rows, a bootstrap row, DDL)."""
    on_1 = [
        _msg(xid=1, xoffset=0, position="mysql-bin.000042:100", data={"id": 1}),
        _msg(xid=1, commit=True, position="mysql-bin.000042:100", data={"id": 2}),
        _msg(type="table-alter", ts=1700000001000, sql="alter table orders add c int", position="mysql-bin.000042:300"),
    ]
    off = [
        _msg(type="update", xid=2, commit=True, data={"id": 1, "c": 1}, old={"c": None}),
        _msg(type="bootstrap-insert", data={"id": 3}),
        _msg(type="table-alter", ts=1700000002000, sql="alter table orders add d int"),
        _msg(type="delete", xid=3, commit=True, data={"id": 2}),
    ]
    on_2 = [
        _msg(type="update", xid=4, commit=True, position="mysql-bin.000043:4", data={"id": 1, "c": 2}, old={"c": 1}),
        _msg(type="delete", xid=5, commit=True, position="mysql-bin.000043:90", data={"id": 1}),
    ]
    return on_1 + off + on_2


@pytest.mark.unit
@pytest.mark.parametrize("order", [None, "kafka", "position"])
@pytest.mark.parametrize("format_id", ["maxwell-json", "auto"])
def test_stream_switching_output_binlog_position_never_mixes_key_spaces(order: str | None, format_id: str) -> None:
    """Every event of the stream is keyed in the one space option ``order`` names: Kafka keys only, or
    binlog keys only (the messages without a position are then rejects, not Kafka keys)."""
    stream = _switching_stream()
    base = ParseContext(options={} if order is None else {"order": order})
    parser = registry.get(format_id)
    keys: list[str] = []
    rejected: list[int] = []
    for index, raw in enumerate(stream):
        outcome = parser(raw, base.at("in", PARTITION, FIRST_OFFSET + index))
        if isinstance(outcome, Rejected):
            assert outcome.code == "missing_field" and "output_binlog_position" in outcome.reason
            rejected.append(index)
            continue
        assert [event.source.format for event in outcome.events] == ["maxwell-json"]
        keys.extend(event.order_key for event in outcome.events)
    if order == "position":
        assert rejected == [3, 4, 5, 6]  # exactly the messages without a position
        assert [key.split(".")[0] for key in keys] == [f"{n:020d}" for n in (42, 42, 42, 43, 43)]
    else:
        assert rejected == []
        assert keys == [kafka_key(FIRST_OFFSET + index) for index in range(len(stream))]
    assert_strictly_increasing(keys)


@pytest.mark.unit
def test_order_option_is_checked_at_start_and_per_message() -> None:
    spec = registry.spec("maxwell-json")
    for good in ({}, {"order": "kafka"}, {"order": "position"}, {"order": ""}):
        spec.check_options(good)
    for bad in ({"order": "binlog"}, {"order": "Position"}, {"order": 1}, {"bytes_encoding": "hex"}):
        with pytest.raises(ConfigError, match="bad option"):
            spec.check_options(bad)
    assert "order" in spec.option_docs()
    error = _reject(_msg(data={"id": 1}), ParseContext(options={"order": "binlog"}))
    assert (error.code, error.reason) == ("config", "option order 'binlog' is not one of kafka, position")


@pytest.mark.unit
def test_issue16_without_position_same_second_and_earlier_ts_keep_input_order() -> None:
    # Before: (ts, xid, seq): two transactions' changes of one row in one second ordered by xid,
    # which is not commit order; and a transaction that started earlier (smaller ts) sorted first.
    messages = [
        _msg(type="insert", ts=1700000000, xid=11, commit=True, data={"id": 1, "v": "a"}),
        _msg(type="update", ts=1700000000, xid=10, commit=True, data={"id": 1, "v": "b"}, old={"v": "a"}),
        _msg(type="update", ts=1699999999, xid=12, commit=True, data={"id": 1, "v": "c"}, old={"v": "b"}),
        _msg(type="table-drop", ts=1699999998000, sql="drop table orders"),
    ]
    assert_strictly_increasing(keys_in_input_order(parse, messages))


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raw", "code", "fragment"),
    [
        (b"\xff\xfe", "malformed", "invalid"),
        (b"[1, 2]", "wrong_format", "JSON object"),
        (b'{"type":"INSERT","data":[{"id":"1"}],"isDdl":false,"table":"t"}', "wrong_format", "Canal"),
        (b'{"table":"S.T","op_type":"I","pos":"1","after":{}}', "wrong_format", "GoldenGate"),
        (b'{"payload":{"op":"c"}}', "wrong_format", "Debezium"),
        (_msg(type=5), "bad_field", "'type'"),
        (_msg(type="merge"), "unsupported", "'merge'"),
        (_msg(ts=None, data={"id": 1}), "missing_field", "'ts'"),
        (_msg(ts="soon", data={"id": 1}), "bad_field", "'ts'"),
        (_msg(ts="9" * 5000, data={"id": 1}), "bad_field", "'ts'"),
        (_msg(table=None, data={"id": 1}), "missing_field", "'table'"),
        (_msg(), "missing_field", "'data'"),
        (_msg(data=[1]), "wrong_format", "Canal"),
        (_msg(data="x"), "bad_field", "data"),
        (_msg(data={"id": 1}, position="nofile"), "bad_field", "'position'"),
        (_msg(data={"id": 1}, position="f.1:99999999999"), "bad_field", "'position'"),
        (_msg(data={"id": 1}, commit="yes"), "bad_field", "'commit'"),
        (_msg(data={"id": 1}, xoffset=-1), "bad_field", "'xoffset'"),
        (_msg(data={"id": 1}, primary_key_columns="id"), "bad_field", "primary_key_columns"),
        (_msg(data={"id": 1}, primary_key_columns=["id"], primary_key=[1, 2]), "inconsistent", "primary_key"),
        (_msg(type="delete", data={"x": 1}, primary_key_columns=["id"]), "inconsistent", "['id']"),
        (_msg(data={"id": 1}, old={"id": 0}), "inconsistent", "'old'"),
        (_msg(type="update", data={"id": 1}, old=[1]), "bad_field", "old"),
        (_msg(type="table-create", ts=1700000000000), "missing_field", "'sql'"),
    ],
)
def test_rejects(raw: bytes, code: str, fragment: str) -> None:
    error = _reject(raw)
    assert error.code == code, error.reason
    assert fragment in error.reason


@pytest.mark.unit
def test_deep_nesting_never_crashes() -> None:
    deep = b'{"database":"d","table":"t","type":"insert","ts":1,"data":{"j":' + b"[" * 600 + b"]" * 600 + b"}}"
    outcome = registry.get("maxwell-json")(deep, CTX)
    assert isinstance(outcome, Rejected) and outcome.code != "internal"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)
_FIELDS = st.sampled_from(
    ["database", "table", "type", "ts", "xid", "xoffset", "commit", "position", "data", "old", "sql", "primary_key"]
)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_FIELDS, _JSON, max_size=8), st.sampled_from(["insert", "update", "delete", "table-drop", None]))
def test_any_message_is_parsed_or_rejected_with_a_known_code(doc: dict[str, Any], kind: str | None) -> None:
    if kind is not None:
        doc["type"] = kind
    outcome = registry.get("maxwell-json")(json.dumps(doc).encode(), CTX)
    if isinstance(outcome, Rejected):
        assert outcome.code in REJECT_CODES and outcome.code != "internal", outcome.reason
    else:
        assert isinstance(outcome, Parsed)
