"""drs-json and drs-json-c: behaviour beyond the golden corpus."""

from __future__ import annotations

import datetime as _dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.drs_json.parser import parse_json, parse_json_c
from binlake.shared.event.values import BigInt, SqlTime, Unparsed
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
from binlake.shared.parsing.result import Parsed
from tests.support.order_support import assert_strictly_increasing, keys_in_input_order

CORPUS = Path(__file__).parents[2] / "corpus"
PUBLISHED = (CORPUS / "drs-json" / "published-update-pk-change.in.json").read_bytes()
CTX = ParseContext(topic="t", partition=1, offset=42)
UTC = _dt.UTC


def message(**fields: Any) -> bytes:
    doc: dict[str, Any] = {
        "mysqlType": {"id": "int", "v": "varchar"},
        "id": 100,
        "es": 1624614713000,
        "ts": 1624614713500,
        "database": "db",
        "table": "t",
        "type": "INSERT",
        "isDdl": False,
        "sql": "",
        "data": [{"id": "1", "v": "a"}],
        "old": None,
        "pkNames": ["id"],
    }
    doc.update(fields)
    return json.dumps(doc).encode()


def reject_code(parse: Any, raw: bytes, ctx: ParseContext = CTX) -> str:
    with pytest.raises(RejectError) as info:
        parse(raw, ctx)
    code: str = info.value.code
    return code


@pytest.mark.unit
def test_published_sample_values_are_typed_exactly() -> None:
    (event,) = parse_json(PUBLISHED, CTX).events
    assert event.op == "UPDATE"
    assert event.source.table == "test"  # "test " in the sample: trailing blank stripped
    assert event.source.database == "test01"
    assert event.source.sequence == "27677"
    assert event.ts_ms == 1624614713000 and event.ingest_ts_ms == 1625058726990
    assert event.before is not None and event.after is not None
    assert event.before["id"] == 103 and event.after["id"] == 104
    sample = json.loads(PUBLISHED)
    assert event.after["c12"] == bytes(json.loads(sample["data"][0]["c12"]))
    assert event.after["c11"] == b"" and event.after["c2"] == b""
    assert event.after["c5"] == _dt.datetime(2021, 6, 25, 9, 51, 53, 201000, tzinfo=UTC)
    assert event.after["c4"] == _dt.datetime(2021, 6, 25, 17, 51, 53)  # DATETIME stays local
    assert event.after["c9"] == Decimal("9874510357") and isinstance(event.after["c9"], Decimal)
    assert event.after["c8"] == 12510357.0
    # old is a full image: only the columns whose values differ changed.
    assert event.changed_columns == ["c13", "id"]
    assert event.primary_key == ["id"]
    assert event.origin.topic == "t" and event.origin.offset == 42 and event.origin.row == 0
    assert all(not column.inferred for column in event.columns)


@pytest.mark.unit
def test_delete_row_location_differs_between_json_and_json_c() -> None:
    in_old = message(type="DELETE", data=None, old=[{"id": "5", "v": "x"}])
    in_data = message(type="DELETE", data=[{"id": "5", "v": "x"}], old=None)
    (event,) = parse_json(in_old, CTX).events
    assert event.op == "DELETE" and event.before == {"id": 5, "v": "x"} and event.after is None
    (event_c,) = parse_json_c(in_data, CTX).events
    assert event_c.before == {"id": 5, "v": "x"} and event_c.source.format == "drs-json-c"
    assert reject_code(parse_json, in_data) == MISSING_FIELD
    assert reject_code(parse_json_c, in_old) == MISSING_FIELD


@pytest.mark.unit
def test_timestamp_renderings() -> None:
    types = {"id": "int", "v": "timestamp"}
    json_msg = message(mysqlType=types, data=[{"id": "1", "v": "1624614713.201"}])
    json_c_msg = message(mysqlType=types, data=[{"id": "1", "v": "2021-06-25 17:51:53"}])
    shanghai = ParseContext(source_timezone=zone("Asia/Shanghai"))
    (a,) = parse_json(json_msg, shanghai).events
    (b,) = parse_json_c(json_c_msg, shanghai).events
    (c,) = parse_json_c(json_c_msg, CTX).events
    assert a.after is not None and b.after is not None and c.after is not None
    assert a.after["v"] == _dt.datetime(2021, 6, 25, 9, 51, 53, 201000, tzinfo=UTC)  # epoch: zone irrelevant
    assert b.after["v"] == _dt.datetime(2021, 6, 25, 9, 51, 53, tzinfo=UTC)  # wall clock in Shanghai
    assert c.after["v"] == _dt.datetime(2021, 6, 25, 17, 51, 53, tzinfo=UTC)  # wall clock in UTC


@pytest.mark.unit
def test_full_sync_types() -> None:
    (snap,) = parse_json(message(type="INIT"), CTX).events
    assert snap.op == "SNAPSHOT" and snap.before is None and snap.after == {"id": 1, "v": "a"}
    ddl = message(type="INIT_DDL", isDdl=True, sql="CREATE TABLE t (id int)", data=None, mysqlType=None)
    (event,) = parse_json(ddl, CTX).events
    assert event.op == "DDL" and event.ddl is not None and event.ddl.kind == "CREATE_TABLE"
    # INIT_DDL is a DDL even when isDdl is absent; contradicting isDdl is rejected.
    no_flag = json.loads(ddl)
    del no_flag["isDdl"]
    assert parse_json(json.dumps(no_flag).encode(), CTX).events[0].op == "DDL"
    assert reject_code(parse_json, message(type="INIT_DDL", isDdl=False, sql="CREATE TABLE t (id int)")) == (
        INCONSISTENT
    )


@pytest.mark.unit
def test_order_key_follows_drs_id_then_row() -> None:
    keys: list[str] = []
    for seq in (9, 10, 100, 2**40):
        rows = [{"id": str(n), "v": "a"} for n in range(3)]
        parsed = parse_json(message(id=seq, data=rows), CTX)
        assert [e.origin.row for e in parsed.events] == [0, 1, 2]
        keys.extend(e.order_key for e in parsed.events)
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)
    assert keys[0] == "00000000000000000009.00000000000000000042.000000"  # minor: the input offset
    # es does not take part: a later id with an earlier es still sorts after.
    late = parse_json(message(id=101, es=1), CTX).events[0].order_key
    early = parse_json(message(id=100, es=2**40), CTX).events[0].order_key
    assert early < late


@pytest.mark.unit
@pytest.mark.parametrize("parse", [parse_json, parse_json_c])
def test_issue16_messages_sharing_an_id_keep_input_order(parse: Any) -> None:
    # Should DRS, like Canal, give several flat messages one id: row 2 of the first message and
    # the same row changed again (same es) in the next one. Before: (id, 0, row) put row 2 last.
    rows = [{"id": str(n), "v": "a"} for n in range(3)]
    first = message(id=7, type="INSERT", data=rows)
    again = message(id=7, type="UPDATE", data=[{"id": "2", "v": "b"}], old=[{"v": "a"}])
    twice = message(id=7, type="UPDATE", data=[{"id": "2", "v": "c"}], old=[{"v": "b"}])
    assert_strictly_increasing(keys_in_input_order(parse, [first, again, twice]))
    # A later id with an earlier es sorts later; the id still orders across offsets.
    late = message(id=8, es=1, data=[{"id": "2", "v": "d"}])
    keys = keys_in_input_order(parse, [first, late])
    assert_strictly_increasing(keys)


@pytest.mark.unit
def test_lossless_values() -> None:
    types = {"id": "bigint", "d": "decimal", "t": "time", "z": "date", "b": "blob"}
    row = {"id": "18446744073709551615", "d": "-0.000000000000000000000000000001", "t": "-838:59:59"}
    row |= {"z": "0000-00-00", "b": "[-1, 0, 255]"}
    (event,) = parse_json(message(mysqlType=types, data=[row]), CTX).events
    after = event.after
    assert after is not None
    assert isinstance(after["id"], BigInt) and after["id"] == 2**64 - 1
    assert after["d"] == Decimal("-1E-30")
    assert after["t"] == SqlTime(-(838 * 3600 + 59 * 60 + 59) * 1_000_000)
    assert after["z"] == Unparsed("0000-00-00")
    assert after["b"] == b"\xff\x00\xff"


@pytest.mark.unit
def test_oracle_variant() -> None:
    raw = (CORPUS / "drs-json" / "oracle-insert-from-field-table.in.json").read_bytes()
    (event,) = parse_json(raw, CTX).events
    assert event.source.db_type == "ORACLE"
    assert event.source.schema == "HR" and event.source.database is None
    assert event.after is not None
    assert event.after["HIRED"] == _dt.datetime(2021, 6, 25, 9, 30)  # Oracle DATE keeps its time
    assert event.after["ID"] == Decimal("7")
    assert event.after["PHOTO"] == b"\x01\x02\x03"
    # JSON-C puts the Oracle schema in "database".
    raw_c = (CORPUS / "drs-json-c" / "oracle-insert-database-is-schema.in.json").read_bytes()
    (event_c,) = parse_json_c(raw_c, CTX).events
    assert event_c.source.schema == "HR" and event_c.source.database is None


@pytest.mark.unit
def test_untyped_columns_are_inferred() -> None:
    (event,) = parse_json(message(mysqlType=None, data=[{"id": "1", "extra": "x"}]), CTX).events
    assert event.after == {"id": "1", "extra": "x"}
    assert {c.name: (c.logical_type, c.inferred) for c in event.columns} == {
        "id": ("string", True),
        "extra": ("string", True),
    }


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (b"", MALFORMED),
        (b"\x00\x01garbage", MALFORMED),
        (b"[1, 2]", WRONG_FORMAT),
        (b"42", WRONG_FORMAT),
        (b'"INSERT"', WRONG_FORMAT),
        (b'{"op": "c", "after": {"id": 1}}', WRONG_FORMAT),
        (message(type=5), BAD_FIELD),
        (message(isDdl="false"), BAD_FIELD),
        (message(data={"id": "1"}), WRONG_FORMAT),
        (message(data=[{"id": "x"}]), BAD_VALUE),
        (message(data=[{"v": "no key"}]), INCONSISTENT),
        (message(data=[]), MISSING_FIELD),
        (message(data=["not a row"]), BAD_FIELD),
        (message(id=None), MISSING_FIELD),
        (message(id="abc"), BAD_FIELD),
        (message(id=10**21), BAD_FIELD),
        (message(id=1.5), BAD_FIELD),
        (message(type="REPLACE"), UNSUPPORTED),
        (message(pkNames=[1]), BAD_FIELD),
        (message(mysqlType={"id": ["int"]}), BAD_FIELD),
        (message(dbType=["Oracle"]), BAD_FIELD),
        (message(id=1).replace(b'"id": 1,', b'"id": 1e999999999,'), BAD_FIELD),  # int() of it would never end
        (message(data=[{"id": 7}]).replace(b'"id": 7', b'"id": 7e999999999'), BAD_VALUE),
        (b'{"type": "INSERT", "data": ' + b"[" * 5000 + b"]" * 5000 + b"}", MALFORMED),
    ],
)
def test_rejects(raw: bytes, code: str) -> None:
    assert reject_code(parse_json, raw) == code


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3),
    max_leaves=12,
)
_KEYS = st.sampled_from(["type", "opType", "data", "old", "id", "mysqlType", "columnType", "pkNames", "dbType"])


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS | st.text(max_size=5), _JSON, max_size=6))
def test_never_raises_anything_but_reject(doc: dict[str, Any]) -> None:
    raw = json.dumps(doc).encode()
    for parse in (parse_json, parse_json_c):
        try:
            result = parse(raw, CTX)
        except RejectError:
            continue
        assert isinstance(result, Parsed)
