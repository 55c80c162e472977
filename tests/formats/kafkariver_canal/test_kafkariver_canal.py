"""kafkariver-canal: KafkaRiverCanal one-row-per-message JSON."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.kafkariver_canal.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt, SqlTime, Unparsed
from binlake.shared.parsing import errors
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import RejectError
from binlake.shared.parsing.result import Parsed

SHANGHAI = ParseContext(topic="t", partition=2, offset=9, source_timezone=ZoneInfo("Asia/Shanghai"))


def col(name: str, type_text: str | None, value: Any = None, **flags: Any) -> dict[str, Any]:
    item: dict[str, Any] = {"n": name, "null": False}
    if type_text is not None:
        item["t"] = type_text
    if value is not None:
        item["v"] = value
    item.update(flags)
    return item


def msg(event: Any = "i", columns: Any = None, **overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "binlog": "6816@mysql-bin.000070",
        "time": 1450235092000,
        "canalTime": 1450235093370,
        "db": "TestCanal",
        "table": "g_order_010",
        "event": event,
        "columns": columns
        if columns is not None
        else [col("order_id", "bigint(20)", "126"), col("phone", "varchar(15)", "13264494028")],
        "keys": ["order_id"],
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
    assert FORMAT_ID == "kafkariver-canal"
    assert PARSER_VERSION == "1"


@pytest.mark.unit
def test_insert_source_times_and_types() -> None:
    event = one(msg())
    assert event.op == "INSERT"
    assert event.before is None
    assert event.after == {"order_id": 126, "phone": "13264494028"}
    assert event.primary_key == ["order_id"]
    assert event.ts_ms == 1450235092000
    assert event.ingest_ts_ms == 1450235093370
    assert [(c.name, c.source_type, c.logical_type, c.inferred) for c in event.columns] == [
        ("order_id", "bigint(20)", "int64", False),
        ("phone", "varchar(15)", "string", False),
    ]
    src = event.source
    assert (src.format, src.db_type, src.database, src.table) == (
        "kafkariver-canal",
        "MYSQL",
        "TestCanal",
        "g_order_010",
    )
    assert (src.binlog_file, src.binlog_pos) == ("mysql-bin.000070", 6816)
    assert event.order_key == "00000000000000000070.00000000000000006816.000000"
    assert (event.origin.topic, event.origin.partition, event.origin.offset, event.origin.row) == ("t", 2, 9, 0)


@pytest.mark.unit
def test_update_rebuilds_prior_row() -> None:
    event = one(
        msg(
            "u",
            [
                col("order_id", "bigint(20)", "126", updated=False),
                col("x_id", "bigint(20)", "123456", updated=False),
                col("name", "varchar(100)", "小春", origin_val="小明", updated=True),
            ],
        )
    )
    assert event.op == "UPDATE"
    assert event.after == {"order_id": 126, "x_id": 123456, "name": "小春"}
    assert event.before == {"order_id": 126, "x_id": 123456, "name": "小明"}
    assert event.changed_columns == ["name"]


@pytest.mark.unit
def test_update_unknown_old_values_stay_absent() -> None:
    event = one(
        msg(
            "u",
            [
                col("order_id", "bigint(20)", "1", updated=False),
                col("qty", "int(11)", "5", updated=True, origin_val=""),  # "" cannot be an int: unknown
                col("label", "varchar(9)", "b", updated=True, origin_val=""),  # "" is a valid string
                col("gone", "varchar(9)", "", null=True, updated=True, origin_val="was"),
                col("was_null", "decimal(4,2)", "1.50", updated=True, origin_val=None),
                col("no_old", "varchar(9)", "x", updated=True),
                col("no_flag", "varchar(9)", "y"),
            ],
        )
    )
    assert event.before == {"order_id": 1, "label": "", "gone": "was", "was_null": None}
    assert event.after is not None
    assert event.after["gone"] is None
    assert event.after["was_null"] == Decimal("1.50")
    assert event.changed_columns == ["qty", "label", "gone", "was_null", "no_old"]


@pytest.mark.unit
def test_null_flag_wins_over_value() -> None:
    event = one(
        msg(
            columns=[
                col("order_id", "bigint(20)", "1"),
                col("a", "timestamp", "2015-08-10 13:08:13", null=True),
                col("b", "bigint(20)", null=True),
                {"n": "c", "t": "text", "v": None},
            ]
        )
    )
    assert event.after == {"order_id": 1, "a": None, "b": None, "c": None}


@pytest.mark.unit
def test_tricky_types() -> None:
    event = one(
        msg(
            columns=[
                col("order_id", "bigint(20) unsigned", "18446744073709551615"),
                col("amount", "decimal(65,30)", "1234567890123456789012345678901234.5"),
                col("at", "timestamp(3)", "2015-08-10 13:08:13.250"),
                col("local", "datetime", "2015-08-10 13:08:13"),
                col("d0", "date", "0000-00-00"),
                col("dur", "time(6)", "838:59:59.000001"),
                col("raw", "varbinary(4)", "\u00ff\u0001"),
                col("free", None, "text"),
            ]
        )
    )
    after = event.after
    assert after is not None
    assert isinstance(after["order_id"], BigInt) and after["order_id"] == 2**64 - 1
    assert after["amount"] == Decimal("1234567890123456789012345678901234.5")
    assert after["at"] == dt.datetime(2015, 8, 10, 5, 8, 13, 250000, tzinfo=dt.UTC)
    assert after["local"] == dt.datetime(2015, 8, 10, 13, 8, 13)
    assert after["d0"] == Unparsed("0000-00-00")
    assert after["dur"] == SqlTime(((838 * 60 + 59) * 60 + 59) * 1_000_000 + 1)
    assert after["raw"] == b"\xff\x01"
    assert after["free"] == "text"
    kinds = {c.name: (c.logical_type, c.inferred) for c in event.columns}
    assert kinds["order_id"] == ("uint64", False)
    assert kinds["free"] == ("string", True)
    assert [c.name for c in event.columns][-1] == "free"


@pytest.mark.unit
def test_bytes_encoding_option() -> None:
    ctx = ParseContext(options={"bytes_encoding": "base64"})
    event = one(msg(columns=[col("order_id", "bigint(20)", "1"), col("raw", "blob", "/wE=")]), ctx)
    assert event.after is not None and event.after["raw"] == b"\xff\x01"
    assert reject(msg(), ParseContext(options={"bytes_encoding": "rot13"})).code == errors.CONFIG


@pytest.mark.unit
def test_json_number_values_are_exact() -> None:
    raw = json.dumps(msg(columns=[col("order_id", "bigint(20)", 7), col("amount", "decimal(30,20)", "X")]))
    raw = raw.replace('"X"', "0.12345678901234567890")
    event = one(raw.encode())
    assert event.after == {"order_id": 7, "amount": Decimal("0.12345678901234567890")}


@pytest.mark.unit
def test_delete_and_order_across_messages() -> None:
    delete = one(msg("d", binlog="58851@mysql-bin.000070"))
    assert delete.op == "DELETE"
    assert delete.after is None
    assert delete.before == {"order_id": 126, "phone": "13264494028"}
    keys = [
        one(msg(binlog="999999@mysql-bin.000069")).order_key,
        one(msg(binlog="6816@mysql-bin.000070")).order_key,
        one(msg("u", binlog="25521@mysql-bin.000070")).order_key,
        delete.order_key,
        one(msg(binlog="4@mysql-bin.000071")).order_key,
    ]
    assert keys == sorted(keys)
    assert len(set(keys)) == len(keys)


@pytest.mark.unit
def test_keys_absent_or_empty() -> None:
    assert one(msg(keys=None)).primary_key == []
    assert one(msg(keys=[])).primary_key == []


@pytest.mark.unit
@pytest.mark.parametrize(
    ("doc", "code", "fragment"),
    [
        ({"type": "INSERT", "data": [{"id": "1"}], "table": "t"}, errors.WRONG_FORMAT, "KafkaRiverCanal"),
        ([msg()], errors.WRONG_FORMAT, "JSON object"),
        (msg(event=None), errors.MISSING_FIELD, "'event'"),
        (msg(event="x"), errors.UNSUPPORTED, "'x'"),
        (msg(binlog="mysql-bin.000070"), errors.BAD_FIELD, "offset@binlog-file"),
        (msg(binlog="abc@mysql-bin.000070"), errors.BAD_FIELD, "offset@binlog-file"),
        (msg(binlog="12@"), errors.BAD_FIELD, "offset@binlog-file"),
        (msg(binlog="12@binlog"), errors.BAD_FIELD, "sequence number"),
        (msg(binlog=12), errors.BAD_FIELD, "'binlog'"),
        (msg(db=None), errors.MISSING_FIELD, "'db'"),
        (msg(table=""), errors.MISSING_FIELD, "'table'"),
        (msg(columns=[]), errors.BAD_FIELD, "'columns'"),
        (msg(columns="x"), errors.BAD_FIELD, "'columns'"),
        (msg(columns=[1]), errors.BAD_FIELD, "columns[0]"),
        (msg(columns=[{"t": "int", "v": "1"}]), errors.MISSING_FIELD, "'n'"),
        (msg(columns=[{"n": 5, "v": "1"}]), errors.BAD_FIELD, "'n'"),
        (msg(columns=[col("order_id", "bigint(20)", "1"), {"n": "a", "t": 3, "v": "1"}]), errors.BAD_FIELD, "'t'"),
        (msg(columns=[col("order_id", "bigint(20)", "1", null="no")]), errors.BAD_FIELD, "'null'"),
        (msg(columns=[col("order_id", "bigint(20)", "x")]), errors.BAD_VALUE, "order_id"),
        (msg(columns=[col("order_id", "bigint(20)")]), errors.MISSING_FIELD, "'v'"),
        (msg(columns=[{"n": "order_id", "t": "int", "v": None, "null": False}]), errors.INCONSISTENT, "null"),
        (msg(columns=[col("x_id", "bigint(20)", "1")]), errors.INCONSISTENT, "order_id"),
        (msg(columns=[col("order_id", "int", "1"), col("order_id", "int", "2")]), errors.INCONSISTENT, "twice"),
        (msg(keys="order_id"), errors.BAD_FIELD, "'keys'"),
        (msg(time="yesterday"), errors.BAD_FIELD, "'time'"),
        (msg(canalTime=2**63), errors.BAD_FIELD, "'canalTime'"),
        (msg(binlog=f"{2**63}@mysql-bin.000001"), errors.BAD_FIELD, "64-bit"),
        (msg("u", [col("order_id", "int", "1", updated="yes")]), errors.BAD_FIELD, "'updated'"),
        (msg("u", [col("order_id", "int", "1"), col("q", "int", "2", updated=True, origin_val="z")]),
         errors.BAD_VALUE, "origin_val"),
    ],
)  # fmt: skip
def test_rejects(doc: Any, code: str, fragment: str) -> None:
    error = reject(doc)
    assert error.code == code, error.reason
    assert fragment in error.reason


@pytest.mark.unit
def test_malformed_bytes() -> None:
    assert reject(b"\xc3\x28").code == errors.MALFORMED
    assert reject(b'{"binlog": ').code == errors.MALFORMED


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4),
    max_leaves=20,
)


@pytest.mark.unit
@settings(max_examples=300, deadline=None)
@given(
    field=st.sampled_from(["binlog", "time", "canalTime", "db", "table", "event", "columns", "keys"]),
    column_field=st.sampled_from(["n", "t", "v", "null", "updated", "origin_val"]),
    value=_JSON,
    in_column=st.booleans(),
)
def test_any_field_value_is_parsed_or_rejected(field: str, column_field: str, value: Any, in_column: bool) -> None:
    doc = msg("u", [col("order_id", "bigint(20)", "1", updated=False), col("a", "decimal(9,2)", "1.5", updated=True)])
    if in_column:
        doc["columns"][1][column_field] = value
    else:
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
