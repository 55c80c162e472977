"""drs-avro: schema handling, DTS-like and flat mappings, rejects."""

from __future__ import annotations

import base64
import datetime as _dt
import io
import json
import os
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest

from binlake.services.drs_avro.parser import parse
from binlake.shared.event.values import BigInt, SqlTime, Unparsed
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import CONFIG, MALFORMED, MISSING_FIELD, WRONG_FORMAT, RejectError
from binlake.shared.parsing.result import Parsed
from tests.support.order_support import assert_strictly_increasing, keys_in_input_order

FOLDER = Path(__file__).parents[2] / "corpus" / "drs-avro"
DTS_SCHEMA: Any = json.loads((FOLDER / "dts-like-record.avsc").read_text())
FLAT_SCHEMA: Any = json.loads((FOLDER / "flat-record.avsc").read_text())
DTS_CTX = ParseContext(topic="drs", options={"avro_schema": DTS_SCHEMA})
FLAT_CTX = ParseContext(topic="drs", options={"avro_schema": FLAT_SCHEMA})
UTC = _dt.UTC


def case_bytes(name: str) -> bytes:
    return base64.b64decode((FOLDER / f"{name}.in.b64").read_text().strip())


def record_schema(schema: Any) -> Any:
    parsed = fastavro.parse_schema(schema)
    return parsed[-1] if isinstance(parsed, list) else parsed


def encode(schema: Any, record: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    fastavro.schemaless_writer(buf, record_schema(schema), record)
    return buf.getvalue()


def reject_code(raw: bytes, ctx: ParseContext) -> str:
    with pytest.raises(RejectError) as info:
        parse(raw, ctx)
    code: str = info.value.code
    return code


@pytest.mark.unit
@pytest.mark.parametrize("name", sorted(p.name.split(".")[0] for p in FOLDER.glob("*.record.json")))
def test_corpus_binary_matches_its_reviewable_json(name: str) -> None:
    """Each .in.b64 is exactly the record shown in .record.json (Avro JSON encoding)."""
    ctx = json.loads((FOLDER / f"{name}.ctx.json").read_text()) if (FOLDER / f"{name}.ctx.json").exists() else {}
    schema = record_schema(json.loads((FOLDER / ctx.get("avro_schema_file", "dts-like-record.avsc")).read_text()))
    expected = (FOLDER / f"{name}.record.json").read_text().strip()
    (record,) = list(fastavro.json_reader(io.StringIO(expected), schema))
    assert isinstance(record, dict)
    raw = case_bytes(name)
    if name in ("truncated", "trailing-bytes"):
        full = encode(schema, record) if name == "truncated" else raw[:-2]
        assert raw in (full[: len(full) // 2], full + b"\x00\x00")
        return
    decoded = fastavro.schemaless_reader(io.BytesIO(raw), schema, None, return_record_name=True)
    out = io.StringIO()
    fastavro.json_writer(out, schema, [decoded])
    assert out.getvalue().strip() == expected


@pytest.mark.unit
def test_dts_values_are_typed() -> None:
    (event,) = parse(case_bytes("dts-insert-mysql-typed-values"), DTS_CTX).events
    after = event.after
    assert after is not None
    assert after["id"] == 104 and type(after["id"]) is int
    assert isinstance(after["big"], BigInt) and after["big"] == 2**64 - 1
    assert after["price"] == Decimal("12345678901234567890.123456789")
    assert after["created"] == _dt.datetime(2021, 6, 25, 17, 51, 53, 201000)
    assert after["updated"] == _dt.datetime(2021, 6, 25, 9, 51, 53, 201000, tzinfo=UTC)
    assert after["born"] == _dt.date(2021, 6, 25)
    assert after["dur"] == SqlTime((838 * 3600 + 59 * 60 + 59) * 1_000_000)
    assert after["pic"] == bytes([0, 255, 106, 103]) and after["raw"] == b"\x00\x01"
    assert after["name"] == "Zoë 中文 ✓" and after["latin"] == "café"
    assert after["note"] is None
    columns = {c.name: c for c in event.columns}
    assert columns["price"].precision == 29 and columns["price"].scale == 9
    assert columns["doc"].logical_type == "json" and columns["yr"].logical_type == "year"
    assert event.primary_key == ["id"]
    assert event.source.checkpoint == "9123@12" and event.source.transaction_id == "123456"
    assert event.ts_ms == 1624614713000  # sourceTimestamp in seconds


@pytest.mark.unit
def test_dts_update_none_means_unknown_and_changed_columns() -> None:
    (event,) = parse(case_bytes("dts-update-pk-change"), DTS_CTX).events
    assert event.before is not None and event.after is not None
    assert "c14" not in event.before and event.after["c14"] == b"jg"  # EmptyObject NONE: absent
    assert event.changed_columns == ["id", "c13"]


@pytest.mark.unit
def test_dts_zero_dates_and_microsecond_fraction() -> None:
    (event,) = parse(case_bytes("dts-zero-date-micro-fraction"), DTS_CTX).events
    after = event.after
    assert after is not None
    assert after["zero"] == Unparsed("0000-00-00 00:00:00") and after["zd"] == Unparsed("0000-00-00")
    assert after["ts6"] == _dt.datetime(1970, 1, 1, 0, 0, 0, 123456, tzinfo=UTC)
    assert after["t6"] == SqlTime(-((3600 + 2 * 60 + 3) * 1_000_000 + 500_000))


@pytest.mark.unit
def test_control_records_produce_no_events() -> None:
    beat = parse(case_bytes("dts-heartbeat"), DTS_CTX)
    assert beat.events == [] and beat.control == "heartbeat"
    assert [h.ts_ms for h in beat.heartbeats] == [1624614800000]
    begin = parse(case_bytes("dts-begin"), DTS_CTX)
    assert begin.events == [] and begin.control == "transaction_begin"


@pytest.mark.unit
def test_object_names_by_source_type() -> None:
    (oracle,) = parse(case_bytes("dts-oracle-update"), DTS_CTX).events
    assert (oracle.source.db_type, oracle.source.database, oracle.source.schema) == ("ORACLE", None, "HR")
    assert oracle.after is not None
    assert oracle.after["SEEN"] == _dt.datetime(2021, 6, 25, 9, 0, 0, 500000, tzinfo=UTC)
    (pg,) = parse(case_bytes("dts-postgresql-three-part-name"), DTS_CTX).events
    assert (pg.source.database, pg.source.schema, pg.source.table) == ("shop", "public", "orders")


@pytest.mark.unit
def test_flat_record_rows_and_exact_doubles() -> None:
    parsed = parse(case_bytes("flat-insert-multi-row"), FLAT_CTX)
    assert [e.origin.row for e in parsed.events] == [0, 1, 2]
    first, second, third = (e.after for e in parsed.events)
    assert first is not None and second is not None and third is not None
    assert first["c7"] == 0.1 and first["c2"] == b"jg"
    assert first["c9"] == Decimal("9874510357.10")
    assert isinstance(second["id"], BigInt)
    assert third["c2"] == b"jg"  # DRS byte-list text in an Avro string
    assert parsed.events[0].source.table == "test"
    (delete_old,) = parse(case_bytes("flat-delete-row-in-old"), FLAT_CTX).events
    (delete_data,) = parse(case_bytes("flat-delete-row-in-data"), FLAT_CTX).events
    assert delete_old.before == delete_data.before == {"id": 1, "c1": "a"}


@pytest.mark.unit
def test_order_key_is_the_drs_id() -> None:
    keys: list[str] = []
    for seq in (3, 27, 27677, 10**12):
        record = {"version": 1, "id": seq, "sourceTimestamp": 1, "sourcePosition": "", "operation": "DDL",
                  "source": {"sourceType": "MySQL", "version": "8"}, "objectName": "db.t",
                  "afterImages": "DROP TABLE t"}  # fmt: skip
        (event,) = parse(encode(DTS_SCHEMA, record), DTS_CTX).events
        assert event.source.sequence == str(seq)
        keys.append(event.order_key)
    assert keys == sorted(keys) and keys[1] == "00000000000000000027.00000000000000000000.000000"


@pytest.mark.unit
def test_issue16_records_sharing_an_id_keep_input_order() -> None:
    # DDL then a later record of the same id with an earlier sourceTimestamp: before, (id, 0, 0) tied.
    def ddl(seq: int, seconds: int) -> bytes:
        record = {"version": 1, "id": seq, "sourceTimestamp": seconds, "sourcePosition": "", "operation": "DDL",
                  "source": {"sourceType": "MySQL", "version": "8"}, "objectName": "db.t",
                  "afterImages": "TRUNCATE TABLE t"}  # fmt: skip
        return encode(DTS_SCHEMA, record)

    keys = keys_in_input_order(parse, [ddl(27, 100), ddl(27, 99), ddl(28, 1)], DTS_CTX)
    assert_strictly_increasing(keys)
    flat = case_bytes("flat-insert-multi-row")  # three rows, one id: twice in a row
    assert_strictly_increasing(keys_in_input_order(parse, [flat, flat], FLAT_CTX))


@pytest.mark.unit
def test_schema_configuration() -> None:
    raw = case_bytes("dts-ddl")
    assert reject_code(raw, ParseContext()) == CONFIG
    # A list schema: the record named Record is used, or the one named by avro_record.
    assert parse(raw, DTS_CTX).events[0].op == "DDL"
    named = ParseContext(options={"avro_schema": DTS_SCHEMA, "avro_record": "com.alibaba.dts.formats.avro.Record"})
    assert parse(raw, named).events[0].op == "DDL"
    wrong = ParseContext(options={"avro_schema": DTS_SCHEMA, "avro_record": "Nope"})
    assert reject_code(raw, wrong) == CONFIG
    # JSON text of a schema is accepted; an invalid schema is a configuration error.
    as_text = ParseContext(options={"avro_schema": json.dumps(DTS_SCHEMA)})
    assert parse(raw, as_text).events[0].op == "DDL"
    assert reject_code(raw, ParseContext(options={"avro_schema": {"type": "record"}})) == CONFIG
    assert reject_code(raw, ParseContext(options={"avro_schema": "{not json"})) == CONFIG


@pytest.mark.unit
def test_framed_messages_are_malformed_with_a_hint() -> None:
    raw = case_bytes("dts-ddl")
    with pytest.raises(RejectError) as info:
        parse(b"\xc3\x01" + b"\x00" * 8 + raw, DTS_CTX)
    assert info.value.code == MALFORMED and "single-object" in info.value.reason


@pytest.mark.unit
def test_plain_avro_values_and_wrong_shapes() -> None:
    schema = {
        "type": "record",
        "name": "Plain",
        "fields": [
            {"name": "operation", "type": "string"},
            {"name": "id", "type": ["null", "long"]},
            {"name": "objectName", "type": "string"},
            {"name": "fields", "type": {"type": "array", "items": {"type": "record", "name": "F", "fields": [
                {"name": "name", "type": "string"}, {"name": "typeName", "type": ["null", "string"]}]}}},
            {"name": "afterImages", "type": {"type": "array", "items": ["null", "long", "double", "string", "bytes",
                {"type": "int", "logicalType": "date"}, {"type": "bytes", "logicalType": "decimal",
                                                          "precision": 10, "scale": 2}]}},
        ],
    }  # fmt: skip
    ctx = ParseContext(options={"avro_schema": schema})
    names = [("a", "bigint"), ("b", None), ("c", None), ("d", None), ("e", None), ("f", "decimal(10,2)")]
    record = {
        "operation": "INSERT",
        "id": 7,
        "objectName": "db.t",
        "fields": [{"name": n, "typeName": t} for n, t in names],
        "afterImages": [5, 0.5, "s", b"\x01", _dt.date(2020, 1, 2), Decimal("12.34")],
    }
    (event,) = parse(encode(schema, record), ctx).events
    assert event.after == {"a": 5, "b": 0.5, "c": "s", "d": b"\x01", "e": _dt.date(2020, 1, 2), "f": Decimal("12.34")}
    columns = {c.name: c for c in event.columns}
    # DRS's bare "bigint" may be unsigned: typed to hold both readings, its value still the integer.
    assert (columns["a"].logical_type, columns["a"].precision, columns["a"].scale) == ("decimal", 20, 0)
    assert not columns["a"].inferred
    assert columns["f"].precision == 10 and columns["f"].scale == 2
    assert columns["e"].logical_type == "date" and columns["e"].inferred
    record["id"] = None
    assert reject_code(encode(schema, record), ctx) == MISSING_FIELD
    other = ParseContext(options={"avro_schema": json.loads((FOLDER / "other-record.avsc").read_text())})
    assert reject_code(case_bytes("wrong-format-other-record"), other) == WRONG_FORMAT


@pytest.mark.unit
@pytest.mark.parametrize("ctx", [DTS_CTX, FLAT_CTX], ids=["dts", "flat"])
def test_random_and_mutated_bytes_only_reject(ctx: ParseContext) -> None:
    valid = case_bytes("dts-insert-mysql-typed-values" if ctx is DTS_CTX else "flat-insert-multi-row")
    rng = __import__("random").Random(7)
    samples = [os.urandom(rng.randint(0, 80)) for _ in range(300)]
    for _ in range(300):
        mutated = bytearray(valid)
        for _ in range(rng.randint(1, 4)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        samples.append(bytes(mutated))
    samples.extend(valid[:n] for n in range(len(valid)))
    for raw in samples:
        try:
            result = parse(raw, ctx)
        except RejectError:
            continue
        assert isinstance(result, Parsed)
