"""ogg-json: value typing, op mapping, images, order keys, time zones and rejects."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.ogg_json.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.errors import REJECT_CODES, RejectError
from binlake.shared.parsing.result import Parsed, Rejected

CTX = ParseContext(topic="t", partition=2, offset=9)


def _msg(**fields: Any) -> bytes:
    base: dict[str, Any] = {
        "table": "QASOURCE.TCUSTORD",
        "op_type": "I",
        "op_ts": "2015-11-05 18:45:36.000000",
        "current_ts": "2016-10-05T10:15:51.267000",
        "pos": "00000000000000002928",
    }
    base.update(fields)
    return json.dumps({k: v for k, v in base.items() if v is not ...}).encode()


def _one(raw: bytes, ctx: ParseContext = CTX) -> ChangeEvent:
    parsed = parse(raw, ctx)
    assert len(parsed.events) == 1
    return parsed.events[0]


@pytest.mark.unit
def test_module_constants_and_registry() -> None:
    assert FORMAT_ID == "ogg-json"
    assert PARSER_VERSION == "1"
    assert registry.get("ogg-json").parse is parse


@pytest.mark.unit
def test_insert_typing_times_and_source() -> None:
    raw = (
        b'{"table":"QASOURCE.TCUSTORD","op_type":"I","op_ts":"2015-11-05 18:45:36.000000",'
        b'"current_ts":"2016-10-05T10:15:51.267000","pos":"00000000000000002928",'
        b'"after":{"CUST_CODE":"WILL","ORDER_DATE":"1994-09-30:15:33:00","ORDER_ID":144,'
        b'"PRODUCT_PRICE":17520.00,"BIG":18446744073709551615,"NOTE":null}}'
    )
    event = _one(raw)
    assert event.op == "INSERT" and event.before is None and event.after is not None
    after = event.after
    assert after["PRODUCT_PRICE"] == Decimal("17520.00") and str(after["PRODUCT_PRICE"]) == "17520.00"
    assert after["ORDER_ID"] == 144
    assert isinstance(after["BIG"], BigInt)
    assert after["ORDER_DATE"] == "1994-09-30:15:33:00"  # untyped: GoldenGate's text kept
    assert "NOTE" in after and after["NOTE"] is None
    assert all(column.inferred for column in event.columns)
    assert event.ts_ms == 1446749136000  # op_ts read as UTC
    assert event.ingest_ts_ms == 1475662551267
    source = event.source
    assert (source.db_type, source.database, source.schema, source.table) == ("ORACLE", None, "QASOURCE", "TCUSTORD")
    assert source.checkpoint == "00000000000000002928"
    assert event.origin.offset == 9 and event.origin.row == 0


@pytest.mark.unit
def test_current_ts_is_read_in_the_source_zone_and_op_ts_in_utc() -> None:
    ctx = ParseContext(source_timezone=zone("Asia/Shanghai"))
    event = _one(_msg(op_ts="2024-03-01 00:00:00", current_ts="2024-03-01T08:00:00.500000", after={"ID": 1}), ctx)
    assert event.ts_ms == 1709251200000
    assert event.ingest_ts_ms == 1709251200500


@pytest.mark.unit
def test_compressed_update_changed_columns_and_absent_columns() -> None:
    event = _one(
        _msg(
            op_type="U",
            primary_keys=["ORDER_ID"],
            before={"ORDER_ID": 765, "PRODUCT_PRICE": 15000.00, "PRODUCT_AMOUNT": 3, "NOTE": None},
            after={"ORDER_ID": 765, "PRODUCT_PRICE": 14000.00, "NOTE": "x"},
        )
    )
    assert event.op == "UPDATE"
    assert event.after is not None and "PRODUCT_AMOUNT" not in event.after  # absent = unknown, not NULL
    assert event.before is not None and event.before["PRODUCT_AMOUNT"] == 3
    assert event.changed_columns == ["PRODUCT_PRICE", "NOTE"]
    assert event.primary_key == ["ORDER_ID"]


@pytest.mark.unit
def test_update_without_before_has_no_changed_columns() -> None:
    event = _one(_msg(op_type="U", after={"ID": 1, "V": 2}))
    assert event.before is None and event.changed_columns is None


@pytest.mark.unit
def test_is_missing_markers() -> None:
    event = _one(
        _msg(
            op_type="D",
            primary_keys=["ID"],
            before={"ID": 1, "ID_isMissing": False, "P": None, "P_isMissing": True, "Q": None, "Q_isMissing": False},
        )
    )
    assert event.op == "DELETE" and event.after is None
    assert event.before == {"ID": 1, "Q": None}
    assert [column.name for column in event.columns] == ["ID", "Q"]


@pytest.mark.unit
def test_truncate_and_tokens_and_catalog() -> None:
    event = _one(_msg(op_type="T", table="CDB.SALES.ORDERS", tokens={"txid": "9.0.80330", "csn": 206080450}))
    assert event.op == "TRUNCATE"
    assert event.ddl is not None and event.ddl.kind == "TRUNCATE_TABLE" and event.ddl.sql == ""
    assert event.before is None and event.after is None and event.columns == []
    assert (event.source.database, event.source.schema, event.source.table) == ("CDB", "SALES", "ORDERS")
    assert event.source.transaction_id == "9.0.80330"
    assert event.source.scn == "206080450"


@pytest.mark.unit
def test_db_type_option() -> None:
    event = _one(_msg(after={"ID": 1}), ParseContext(options={"db_type": "mysql"}))
    assert event.source.db_type == "MYSQL"


@pytest.mark.unit
def test_order_key_follows_trail_sequence_then_rba() -> None:
    positions = ["00000000000000002928", "00000000000000004300", "00000000010000000100", "00000000020000000000"]
    keys = [_one(_msg(pos=pos, after={"ID": 1})).order_key for pos in positions]
    assert keys == sorted(keys) and len(set(keys)) == 4
    assert keys[2] == "00000000000000000001.00000000000000000100.000000"
    # a 23-digit pos (as in the Flink docs) and a 30-digit one still order numerically
    short = _one(_msg(pos="00000000000000000000143", after={"ID": 1})).order_key
    longer = _one(_msg(pos="1" + "0" * 29, after={"ID": 1})).order_key
    assert short < keys[0] < longer


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raw", "code", "fragment"),
    [
        (b"{", "malformed", "invalid JSON"),
        (b"42", "wrong_format", "JSON object"),
        (b'{"schema":{},"payload":{"op":"c"}}', "wrong_format", "payload"),
        (b'{"database":"d","table":"t","type":"insert","ts":1,"data":{}}', "wrong_format", "op_type"),
        (_msg(op_type=None, after={"ID": 1}), "missing_field", "'op_type'"),
        (_msg(op_type=1), "bad_field", "'op_type'"),
        (_msg(op_type="PK", after={"ID": 1}), "unsupported", "'PK'"),
        (_msg(table=None, after={"ID": 1}), "missing_field", "'table'"),
        (_msg(table=["S", "T"], after={"ID": 1}), "bad_field", "'table'"),
        (_msg(table="S..T", after={"ID": 1}), "bad_field", "'table'"),
        (_msg(pos=None, after={"ID": 1}), "missing_field", "'pos'"),
        (_msg(pos="12ab", after={"ID": 1}), "bad_field", "'pos'"),
        (_msg(pos="1" * 31, after={"ID": 1}), "bad_field", "'pos'"),
        (_msg(op_ts="0000-00-00 00:00:00", after={"ID": 1}), "bad_field", "'op_ts'"),
        (_msg(current_ts="later", after={"ID": 1}), "bad_field", "'current_ts'"),
        (_msg(tokens=[1], after={"ID": 1}), "bad_field", "'tokens'"),
        (_msg(tokens={"txid": {"a": 1}}, after={"ID": 1}), "bad_field", "'txid'"),
        (_msg(primary_keys="ID", after={"ID": 1}), "bad_field", "primary_keys"),
        (_msg(), "missing_field", "'after'"),
        (_msg(after={"ID": 1}, before={"ID": 0}), "inconsistent", "'before'"),
        (_msg(op_type="D"), "missing_field", "'before'"),
        (_msg(op_type="D", before={"ID": 1}, after={"ID": 1}), "inconsistent", "'after'"),
        (_msg(op_type="U"), "missing_field", "neither"),
        (_msg(op_type="T", before={"ID": 1}), "inconsistent", "truncate"),
        (_msg(after={"X": 1}, primary_keys=["ID"]), "inconsistent", "['ID']"),
        (_msg(op_type="U", before={"X": 1}, after={"ID": 1}, primary_keys=["ID"]), "inconsistent", "before"),
        (_msg(after=[1]), "bad_field", "after"),
        (_msg(CUST_CODE="WILL"), "wrong_format", "row-modeled"),
    ],
)
def test_rejects(raw: bytes, code: str, fragment: str) -> None:
    with pytest.raises(RejectError) as info:
        parse(raw, CTX)
    assert info.value.code == code, info.value.reason
    assert fragment in info.value.reason


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4),
    max_leaves=20,
)
_FIELDS = st.sampled_from(["table", "op_ts", "current_ts", "pos", "primary_keys", "tokens", "before", "after"])


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_FIELDS, _JSON, max_size=8), st.sampled_from(["I", "U", "D", "T", None]))
def test_any_message_is_parsed_or_rejected_with_a_known_code(doc: dict[str, Any], op: str | None) -> None:
    if op is not None:
        doc["op_type"] = op
    outcome = registry.get("ogg-json")(json.dumps(doc).encode(), CTX)
    if isinstance(outcome, Rejected):
        assert outcome.code in REJECT_CODES and outcome.code != "internal", outcome.reason
    else:
        assert isinstance(outcome, Parsed)
