"""oms-dataworks: OceanBase OMS DataWorks 2.0 JSON."""

from __future__ import annotations

import contextlib
import copy
import datetime as _dt
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.oms_dataworks.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt, SqlTime, Unparsed
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    BAD_VALUE,
    INCONSISTENT,
    MALFORMED,
    MISSING_FIELD,
    UNSUPPORTED,
    WRONG_FORMAT,
    RejectError,
)
from binlake.shared.parsing.result import Heartbeat, Parsed
from tests.support.order_support import assert_strictly_increasing, kafka_key, keys_in_input_order

CORPUS = Path(__file__).parents[2] / "corpus" / "oms-dataworks"
CTX = ParseContext(topic="t", partition=3, offset=99)
UTC = _dt.UTC


def _raw(doc: Any) -> bytes:
    return json.dumps(doc).encode()


def _one(raw: bytes, ctx: ParseContext = CTX) -> ChangeEvent:
    parsed = parse(raw, ctx)
    assert len(parsed.events) == 1
    return parsed.events[0]


def _reject(raw: bytes) -> RejectError:
    with pytest.raises(RejectError) as info:
        parse(raw, CTX)
    return info.value


def _message(op: str = "INSERT", **payload: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "version": "2.0",
        "schema": {
            "source": {"dbType": "ob_mysql", "dbVersion": None, "dbName": "shop", "schema": None, "table": "orders"},
            "column": [{"name": "id", "type": "INT64"}, {"name": "name", "type": "VARCHAR"}],
            "pk": ["id"],
        },
        "payload": {
            "before": None,
            "after": {"data": {"id": 1, "name": "a"}},
            "op": op,
            "timestamp": {"eventTime": 1700000000123, "systemTime": 1700000000456, "checkpointTime": 1700000000},
            "ddl": None,
            "scn": "null",
        },
        "extend": {},
    }
    doc["payload"].update(payload)
    return doc


@pytest.mark.unit
def test_module_constants_and_registry() -> None:
    assert FORMAT_ID == "oms-dataworks"
    assert PARSER_VERSION == "1"
    assert registry.get("oms-dataworks").parse is parse


@pytest.mark.unit
def test_published_insert_is_typed_exactly() -> None:
    raw = (CORPUS / "seed-insert-consistent.in.json").read_bytes()
    event = _one(raw)
    after = event.after
    assert after is not None and event.before is None
    assert event.op == "INSERT"
    assert type(after["int8"]) is int and after["int8"] == 3
    assert after["int64"] == 9223372036854775806 and not isinstance(after["int64"], BigInt)
    assert isinstance(after["bigInt"], BigInt) and after["bigInt"] == 10223372036854775806
    # The 700-digit DECIMAL keeps every published digit (never through a float).
    literal = re.search(r'"decimal": ([0-9.]+)', raw.decode())
    assert literal is not None
    assert isinstance(after["decimal"], Decimal)
    assert after["decimal"].as_tuple() == Decimal(literal.group(1)).as_tuple()
    assert isinstance(after["float64"], float) and after["float32"] == 1.2222
    assert after["boolean"] is True
    assert after["bytes"] == b"hello world"
    assert after["localDate"] == _dt.date(2020, 11, 25)
    assert after["localTime"] == SqlTime(62_000_000)
    assert after["localDateTime"] == _dt.datetime(2020, 11, 25, 0, 1, 2)
    instant = _dt.datetime(2020, 11, 24, 16, 1, 2, 12345, tzinfo=UTC)
    assert after["timestamp"] == instant  # epoch-second text
    assert after["zonedDateTime"] == instant  # Asia/Shanghai wall clock
    assert after["intervalDayToSecond"] == "INTERVAL '3' DAY"
    logical = {c.name: c.logical_type for c in event.columns}
    assert logical["bigInt"] == "integer" and logical["int64"] == "int64" and logical["zonedDateTime"] == "timestamp"
    assert all(not c.inferred for c in event.columns)
    assert event.primary_key == ["int8", "int16"]
    assert event.source.db_type == "OB_MYSQL" and event.source.database == "db" and event.source.table == "tab"
    assert event.source.scn is None and event.source.checkpoint == "1647581000"
    assert event.ts_ms == 1647581000000 and event.ingest_ts_ms == 1647581000795
    assert event.origin.topic == "t" and event.origin.offset == 99 and event.origin.row == 0


@pytest.mark.unit
@pytest.mark.parametrize("name", ["seed-insert", "seed-update", "seed-delete"])
def test_published_samples_name_keys_missing_from_their_data(name: str) -> None:
    error = _reject((CORPUS / f"{name}.in.json").read_bytes())
    assert error.code == INCONSISTENT
    assert "pkName1" in error.reason


@pytest.mark.unit
def test_update_and_delete_images() -> None:
    update = _one(
        _raw(_message("UPDATE", before={"data": {"id": 1, "name": "a"}}, after={"data": {"id": 1, "name": "b"}}))
    )
    assert update.op == "UPDATE"
    assert update.before == {"id": 1, "name": "a"} and update.after == {"id": 1, "name": "b"}
    assert update.changed_columns is None  # DataWorks does not say which columns changed
    delete = _one(_raw(_message("DELETE", before={"data": {"id": 2, "name": None}}, after=None)))
    assert delete.op == "DELETE" and delete.after is None
    assert delete.before == {"id": 2, "name": None}


@pytest.mark.unit
def test_absent_column_stays_absent_and_null_stays_null() -> None:
    event = _one(_raw(_message(after={"data": {"id": 1, "name": None}})))
    assert event.after == {"id": 1, "name": None}
    event = _one(_raw(_message(after={"data": {"id": 1}})))
    assert event.after == {"id": 1}


@pytest.mark.unit
def test_undeclared_columns_are_inferred() -> None:
    event = _one(_raw(_message(after={"data": {"id": 1, "extra": 5}})))
    extra = next(c for c in event.columns if c.name == "extra")
    assert extra.inferred and extra.logical_type == "int64" and extra.source_type is None


@pytest.mark.unit
def test_order_key_is_the_input_kafka_order() -> None:
    event = _one(_raw(_message(scn="170000000000100001")))
    assert event.order_key == kafka_key(99)  # CTX: partition 3, offset 99
    assert event.source.scn == "170000000000100001"  # kept verbatim
    # No eventTime is no longer a reject (it only fed the key): the change time is unknown.
    assert _one(_raw(_message(timestamp=None))).ts_ms is None


@pytest.mark.unit
def test_issue16_same_ms_and_earlier_event_time_later_keep_input_order() -> None:
    # Before: scn when numeric, else eventTime * 10^5: two changes of a row in one ms tied, an
    # earlier eventTime at a later offset sorted first, and a numeric scn beside a "null" one
    # compared on another scale.
    same_ms = _message("UPDATE", before={"data": {"id": 1, "name": "a"}})
    earlier = _message("UPDATE", before={"data": {"id": 1, "name": "a"}}, timestamp={"eventTime": 1600000000000})
    ddl = _message("TRUNCATE", ddl={"text": "truncate table orders"}, after=None, scn="1")
    messages = [same_ms, same_ms, earlier, _message(scn="99999999999999999999"), ddl]
    assert_strictly_increasing(keys_in_input_order(parse, messages))


@pytest.mark.unit
def test_odd_time_renderings() -> None:
    doc = _message()
    doc["schema"]["column"] = [
        {"name": "id", "type": "INT64"},
        {"name": "dt", "type": "DATETIME"},
        {"name": "d", "type": "DATE"},
        {"name": "ts", "type": "TIMESTAMP"},
        {"name": "t", "type": "TIME"},
    ]
    doc["payload"]["after"] = {
        "data": {
            "id": 1,
            "dt": "2020-11-25 00:01:02.123456789 Asia/Shanghai",
            "d": "2020-02-30",
            "ts": "0000-00-00 00:00:00",
            "t": "-838:59:59",
        }
    }
    after = _one(_raw(doc)).after
    assert after is not None
    assert after["dt"] == _dt.datetime(2020, 11, 25, 0, 1, 2, 123456)  # wall clock; zone id dropped
    assert after["d"] == Unparsed("2020-02-30")  # OMS passes invalid dates through verbatim
    assert after["ts"] == Unparsed("0000-00-00 00:00:00")
    assert after["t"] == SqlTime(-(838 * 3600 + 59 * 60 + 59) * 1_000_000)


@pytest.mark.unit
def test_wall_clock_zone_does_not_move_instants_with_zone() -> None:
    ctx = ParseContext(source_timezone=zone("America/New_York"))
    doc = _message()
    doc["schema"]["column"].append({"name": "z", "type": "ZONED_DATETIME"})
    doc["payload"]["after"] = {"data": {"id": 1, "z": "2020-01-01 08:00:00 Asia/Shanghai"}}
    after = _one(_raw(doc), ctx).after
    assert after is not None and after["z"] == _dt.datetime(2020, 1, 1, 0, 0, tzinfo=UTC)


@pytest.mark.unit
def test_heartbeat_and_transaction_markers_emit_no_event() -> None:
    heartbeat = parse(_raw({"version": "2.0", "payload": {"op": "HEARTBEAT", "timestamp": {"eventTime": 5}}}), CTX)
    assert heartbeat == Parsed([], heartbeats=[Heartbeat(5, None)], control="heartbeat")
    for op, control in [("TRANSACTION_BEGIN", "transaction_begin"), ("TRANSACTION_END", "transaction_end")]:
        parsed = parse(_raw({"version": "2.0", "payload": {"op": op}}), CTX)
        assert parsed.events == [] and parsed.control == control


@pytest.mark.unit
def test_ddl_and_truncate() -> None:
    alter = _one(_raw(_message("ALTER", ddl={"text": "alter table orders add column c int"})))
    assert alter.op == "DDL" and alter.ddl is not None and alter.ddl.kind == "ALTER_TABLE"
    assert alter.before is None and alter.after is None and alter.columns == []
    truncate = _one(_raw(_message("TRUNCATE", ddl={"text": "truncate table orders"})))
    assert truncate.op == "TRUNCATE"


@pytest.mark.unit
def test_tenant_is_split_from_oceanbase_database() -> None:
    doc = _message()
    doc["schema"]["source"].update(dbType="ob_oracle", dbName="t1.ORCL", schema="SALES")
    source = _one(_raw(doc)).source
    assert (source.db_type, source.tenant, source.database, source.schema) == ("OB_ORACLE", "t1", "ORCL", "SALES")


@pytest.mark.unit
def test_unsigned_bigint_beyond_int64() -> None:
    doc = _message()
    doc["schema"]["column"].append({"name": "u", "type": "BIGINT"})
    doc["payload"]["after"] = {"data": {"id": 1, "u": 18446744073709551615}}
    after = _one(_raw(doc)).after
    assert after is not None and isinstance(after["u"], BigInt) and after["u"] == 2**64 - 1


@pytest.mark.unit
@pytest.mark.parametrize(
    ("doc", "code"),
    [
        ([1], WRONG_FORMAT),
        ({"data": [], "type": "INSERT", "database": "d"}, WRONG_FORMAT),
        ({"version": "1.0", "payload": {"op": "INSERT"}}, UNSUPPORTED),
        ({"version": 2, "payload": {"op": "INSERT"}}, BAD_FIELD),
        ({"version": "2.0"}, MISSING_FIELD),
        ({"version": "2.0", "payload": "x"}, BAD_FIELD),
        ({"version": "2.0", "payload": {"op": 1}}, BAD_FIELD),
        (_message("insert"), UNSUPPORTED),
        (_message("UPSERT"), UNSUPPORTED),
        (_message(after={"data": {"id": "x"}}), BAD_VALUE),
        (_message(after={"data": {"name": "no key"}}), INCONSISTENT),
        (_message(after=None), MISSING_FIELD),
        (_message(after={"data": [1]}), BAD_FIELD),
        (_message(after=[1]), BAD_FIELD),
        (_message(before={"data": {"id": 1}}), INCONSISTENT),
        (_message("DELETE", before=None), MISSING_FIELD),
        (_message("ALTER", ddl=None), MISSING_FIELD),
        ({"version": "2.0", "payload": {"op": "HEARTBEAT"}}, MISSING_FIELD),
    ],
)
def test_rejects(doc: Any, code: str) -> None:
    assert _reject(_raw(doc)).code == code


@pytest.mark.unit
def test_invalid_json_is_malformed() -> None:
    assert _reject(b'{"version": "2.0",').code == MALFORMED
    assert _reject(b"\xff\xfe").code == MALFORMED


@pytest.mark.unit
def test_table_without_key() -> None:
    doc = _message()
    doc["schema"]["pk"] = None
    assert _one(_raw(doc)).primary_key == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(
    path=st.lists(st.sampled_from(["schema", "payload", "source", "column", "pk", "after", "data", "op"])), value=_JSON
)
def test_never_raises_anything_but_reject(path: list[str], value: Any) -> None:
    doc = copy.deepcopy(_message("UPDATE", before={"data": {"id": 1, "name": "a"}}))
    node: Any = doc
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict) and path:
        node[path[-1]] = value
    else:
        doc["payload"]["after"] = value
    with contextlib.suppress(RejectError):
        parse(_raw(doc), CTX)
