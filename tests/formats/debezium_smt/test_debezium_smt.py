"""debezium-smt: rows flattened by Debezium's ExtractNewRecordState (OMS "DebeziumSmt")."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pytest

from binlake.services.debezium_smt.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt
from binlake.shared.parsing import errors
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import RejectError
from binlake.shared.parsing.result import Parsed

pytestmark = pytest.mark.unit

DECIMAL = "org.apache.kafka.connect.data.Decimal"
CTX = ParseContext(topic="orders", partition=2, offset=41, source_table="shop.orders")


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


def test_module_constants() -> None:
    assert FORMAT_ID == "debezium-smt"
    assert PARSER_VERSION == "1"


@pytest.mark.parametrize(
    ("meta", "expected"),
    [
        ({}, "UPSERT"),
        ({"__deleted": "false"}, "UPSERT"),
        ({"__deleted": False}, "UPSERT"),
        ({"__op": "c", "__deleted": "false"}, "INSERT"),
        ({"__op": "u"}, "UPDATE"),
        ({"__op": "r"}, "SNAPSHOT"),
        ({"__op": "d", "__deleted": "true"}, "DELETE"),
        ({"__op": "d"}, "DELETE"),
        ({"__deleted": "TRUE"}, "DELETE"),
        ({"__deleted": True}, "DELETE"),
    ],
)
def test_op_mapping(meta: dict[str, Any], expected: str) -> None:
    event = one({"id": 1, "v": "x", **meta})
    assert event.op == expected
    if expected == "DELETE":
        assert (event.before, event.after) == ({"id": 1, "v": "x"}, None)
    else:
        assert (event.before, event.after) == (None, {"id": 1, "v": "x"})
    assert event.changed_columns is None


def test_metadata_fields_are_never_columns() -> None:
    event = one({"id": 1, "__deleted": "false", "__op": "c", "__source_ts_ms": 1668489131000, "__lsn": 5})
    assert event.after == {"id": 1}
    assert [column.name for column in event.columns] == ["id"]
    assert event.ts_ms == 1668489131000


def test_table_from_source_table_or_message() -> None:
    event = one({"id": 1})
    assert (event.source.database, event.source.table, event.source.format) == ("shop", "orders", "debezium-smt")
    named = one({"id": 1, "__db": "inventory", "__table": "products"}, ParseContext())
    assert (named.source.database, named.source.table) == ("inventory", "products")
    error = reject({"id": 1}, ParseContext())
    assert error.code == errors.CONFIG
    assert "--source-table" in error.reason


def test_order_key_is_kafka_partition_and_offset() -> None:
    first = one({"id": 1}, CTX.at("orders", 2, 41))
    later = one({"id": 1}, CTX.at("orders", 2, 42))
    assert first.order_key == "00000000000000000002.00000000000000000041.000000"
    assert first.order_key < later.order_key
    assert (first.origin.partition, first.origin.offset) == (2, 41)


def test_schemaless_values_are_inferred_losslessly() -> None:
    raw = b'{"big": 18446744073709551615, "dec": 0.10, "s": "", "n": null, "__deleted": "false"}'
    event = one(raw)
    assert event.after is not None
    assert isinstance(event.after["big"], BigInt)
    assert str(event.after["dec"]) == "0.10"
    assert event.after["s"] == ""
    assert event.after["n"] is None
    assert {column.name: column.logical_type for column in event.columns} == {
        "big": "integer",
        "dec": "decimal",
        "s": "string",
        "n": "unknown",
    }


def test_schema_envelope_types_values_and_skips_metadata_fields() -> None:
    schema = {
        "type": "struct",
        "fields": [
            {"type": "int64", "field": "id"},
            {"type": "bytes", "name": DECIMAL, "parameters": {"scale": "2"}, "field": "p"},
            {"type": "int64", "name": "io.debezium.time.Timestamp", "field": "at"},
            {"type": "bytes", "field": "b"},
            {"type": "string", "field": "__deleted"},
        ],
    }
    payload = {"id": 3, "p": "AQ==", "at": 0, "b": "AP8=", "__deleted": "false"}
    event = one({"schema": schema, "payload": payload})
    assert event.after == {"id": 3, "p": Decimal("0.01"), "at": dt.datetime(1970, 1, 1), "b": b"\x00\xff"}
    assert [column.name for column in event.columns] == ["id", "p", "at", "b"]
    assert not any(column.inferred for column in event.columns)
    hex_ctx = ParseContext(source_table="a.b", options={"bytes_encoding": "hex"})
    assert one({"schema": schema, "payload": dict(payload, p="01", b="6869")}, hex_ctx).after == {
        "id": 3,
        "p": Decimal("0.01"),
        "at": dt.datetime(1970, 1, 1),
        "b": b"hi",
    }


def test_primary_key_option() -> None:
    ctx = ParseContext(source_table="a.b", options={"primary_key": "id"})
    assert one({"id": 1, "__deleted": "true"}, ctx).primary_key == ["id"]
    error = reject({"v": 1, "__deleted": "true"}, ctx)
    assert error.code == errors.INCONSISTENT


def test_tombstones() -> None:
    assert run(b"").control == "tombstone"
    assert run(b"null").control == "tombstone"
    assert run({"schema": {"type": "struct", "fields": []}, "payload": None}).control == "tombstone"


@pytest.mark.parametrize(
    ("doc", "code", "fragment"),
    [
        (b"[1", errors.MALFORMED, "invalid JSON"),
        ("row", errors.WRONG_FORMAT, "JSON object"),
        ({"op": "c", "source": {}, "after": {"id": 1}}, errors.WRONG_FORMAT, "debezium-json"),
        ({"data": [], "isDdl": False, "type": "INSERT"}, errors.WRONG_FORMAT, "Canal"),
        ({"allMetaData": {}, "postStruct": {}}, errors.WRONG_FORMAT, "OMS"),
        ({"id": 1, "__deleted": "maybe"}, errors.BAD_FIELD, "__deleted"),
        ({"id": 1, "__deleted": 1}, errors.BAD_FIELD, "__deleted"),
        ({"id": 1, "__op": "t"}, errors.UNSUPPORTED, "'t'"),
        ({"id": 1, "__op": 5}, errors.BAD_FIELD, "__op"),
        ({"id": 1, "__op": "u", "__deleted": "true"}, errors.INCONSISTENT, "'u'"),
        ({"id": 1, "__op": "d", "__deleted": "false"}, errors.INCONSISTENT, "false"),
        ({"__deleted": "true"}, errors.MISSING_FIELD, "no column values"),
        ({"schema": {"type": "struct", "fields": "x"}, "payload": {"id": 1}}, errors.BAD_FIELD, "fields"),
        ({"schema": {"type": "struct", "fields": []}, "payload": [1]}, errors.BAD_FIELD, "payload"),
    ],
)
def test_rejects(doc: Any, code: str, fragment: str) -> None:
    error = reject(doc)
    assert error.code == code
    assert fragment in error.reason


def test_an_envelope_read_before_gives_what_the_whole_message_gives() -> None:
    """A message in a Kafka Connect envelope whose schema was read before takes debezium-json's envelope
    shortcut (the payload decoded alone): the outcome is the full decode's, for every generated message,
    a value that needs its exact digits and one that is refused."""
    from binlake.services.debezium_json import envelope
    from binlake.shared.cli.generate import messages
    from binlake.shared.generate.workload import Workload
    from binlake.shared.parsing import registry

    raws = [raw for _, raw in messages("debezium-smt", Workload(seed=3, tables=2), 30, "UTC")]
    head, _, payload = raws[-1].partition(b',"payload":')
    assert payload.count(b'"qty":') == 1
    before, _, after = payload.partition(b'"qty":')
    after = after[after.index(b",") :]
    raws += [
        head + b',"payload":' + before + b'"qty":' + qty + after for qty in (b"1e2", b"1.5", b"12345678901234567890")
    ]
    smt = registry.get(FORMAT_ID)

    def outcome(raw: bytes, *, forget: bool) -> Any:
        if forget:  # nothing remembered: this message is decoded whole
            envelope._known.clear()
            envelope._recent.clear()
        out = smt(raw, CTX)
        return (out.events, out.control) if isinstance(out, Parsed) else out

    whole = [outcome(raw, forget=True) for raw in raws]
    for raw in raws:
        outcome(raw, forget=False)  # every schema remembered
    assert all(envelope.fast_document(raw) is not None for raw in raws)  # its schema is remembered now
    assert [outcome(raw, forget=False) for raw in raws] == whole
    assert isinstance(whole[-3], tuple) and not isinstance(whole[-2], tuple)  # 1e2 read as 100, 1.5 refused
