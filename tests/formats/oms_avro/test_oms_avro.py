"""oms-avro: OceanBase OMS Avro (DTS Record, plain Avro binary)."""

from __future__ import annotations

import base64
import contextlib
import datetime as _dt
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.oms_avro.parser import FORMAT_ID, PARSER_VERSION, parse, parsed_schema
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

CORPUS = Path(__file__).parents[2] / "corpus" / "oms-avro"
CTX = ParseContext(topic="t", partition=1, offset=7)
NS = "com.alibaba.dts.formats.avro."
UTC = _dt.UTC


def _integer(text: str) -> Any:
    return (NS + "Integer", {"precision": 8, "value": text})


def _chars(raw: bytes, charset: str = "utf8mb4") -> Any:
    return (NS + "Character", {"charset": charset, "value": raw})


def _dt_item(**parts: int) -> Any:
    return (NS + "DateTime", {k: parts.get(k) for k in ("year", "month", "day", "hour", "minute", "second", "millis")})


def _record(
    operation: str = "INSERT",
    fields: list[tuple[str, int]] | None = None,
    before: Any = None,
    after: Any = None,
    **top: Any,
) -> dict[str, Any]:
    fields = [("id", 8), ("name", 15)] if fields is None else fields
    if after is None and operation in ("INSERT", "INIT", "UPDATE"):
        after = [_integer("1"), _chars(b"a")]
    record: dict[str, Any] = {
        "version": 1,
        "id": 170000000012300001,
        "sourceTimestamp": 1700000000,
        "sourcePosition": "1700000000",
        "safeSourcePosition": "1699999999",
        "sourceTxid": "",
        "source": {"sourceType": "MySQL", "version": "OBMySQL"},
        "operation": operation,
        "objectName": "shop.orders",
        "processTimestamps": [1700000000500],
        "tags": {"pk_uk_info": '{"PRIMARY":["id"]}'},
        "fields": [{"name": n, "dataTypeNumber": c} for n, c in fields],
        "beforeImages": before,
        "afterImages": after,
    }
    record.update(top)
    return record


def _encode(record: dict[str, Any], born: int | None = None) -> bytes:
    out = io.BytesIO()
    if born is None:
        fastavro.schemaless_writer(out, parsed_schema(), record)
    else:
        fastavro.schemaless_writer(out, parsed_schema(with_born_timestamp=True), {**record, "bornTimestamp": born})
    return out.getvalue()


def _one(raw: bytes, ctx: ParseContext = CTX) -> ChangeEvent:
    parsed = parse(raw, ctx)
    assert len(parsed.events) == 1
    return parsed.events[0]


def _code(raw: bytes) -> str:
    with pytest.raises(RejectError) as info:
        parse(raw, CTX)
    return info.value.code


def _corpus(name: str) -> bytes:
    return base64.b64decode((CORPUS / f"{name}.in.b64").read_text().strip())


@pytest.mark.unit
def test_module_constants_and_registry() -> None:
    assert FORMAT_ID == "oms-avro"
    assert PARSER_VERSION == "1"
    assert registry.get("oms-avro").parse is parse


@pytest.mark.unit
def test_published_full_load_is_a_snapshot() -> None:
    event = _one(_corpus("seed-init"))
    assert event.op == "SNAPSHOT" and event.before is None
    assert event.after == {"id": Decimal("1"), "bid": 11, "name": "yyy", "address": None}
    ids = next(c for c in event.columns if c.name == "id")
    assert (ids.source_type, ids.logical_type, ids.precision, ids.scale) == ("mysql:246", "decimal", 1, 0)
    assert event.primary_key == ["id"]
    assert event.source.checkpoint is None and event.source.sequence == "0"
    assert event.ts_ms == 1702371565000 and event.ingest_ts_ms == 1702371565238


@pytest.mark.unit
def test_published_update_and_delete() -> None:
    update = _one(_corpus("seed-update"))
    assert update.op == "UPDATE"
    assert update.before == {"id": 3, "bid": 22, "name": "xxx"}
    assert update.after == {"id": 3, "bid": 44, "name": "xxx"}
    assert update.changed_columns is None
    assert update.source.checkpoint == "1702369756" and update.source.db_type == "OB_MYSQL"
    delete = _one(_corpus("seed-delete"))
    assert delete.op == "DELETE" and delete.after is None and delete.before == {"id": 3, "bid": 44, "name": "xxx"}


@pytest.mark.unit
def test_published_ddl() -> None:
    event = _one(_corpus("seed-ddl"))
    assert event.op == "DDL" and event.ddl is not None
    assert event.ddl.sql.startswith("alter table multi_db_multi_tbl") and event.ddl.kind == "ALTER_TABLE"
    assert event.source.database == "test***" and event.source.table is None


@pytest.mark.unit
def test_order_key_is_the_input_kafka_order() -> None:
    event = _one(_corpus("seed-insert"))
    assert event.order_key == kafka_key(7, partition=1)
    assert event.source.sequence == "170236922143600000"  # the id stays, verbatim


@pytest.mark.unit
def test_issue16_same_id_and_earlier_ids_later_keep_input_order() -> None:
    # Before: the key was ``id``: two records with one id tied (full load: every id is 0), and a
    # sync process whose clock is behind (a smaller id, an earlier sourceTimestamp) sorted first.
    update = _record("UPDATE", before=[_integer("1"), _chars(b"a")], after=[_integer("1"), _chars(b"b")])
    behind = {**update, "id": 170000000000000000, "sourceTimestamp": 1699999999}
    records = [
        _record("INIT", id=0),
        _record("INIT", id=0),
        update,
        update,
        behind,
        _record("DDL", after="truncate table orders", id=1),
    ]
    assert_strictly_increasing(keys_in_input_order(parse, [_encode(r) for r in records]))


@pytest.mark.unit
def test_value_typing() -> None:
    fields = [("id", 8), ("u", 8), ("d", 246), ("ts", 17), ("bad_ts", 7), ("day", 10), ("tm", 11), ("dtm", 12)]
    fields += [("yr", 13), ("f", 5), ("blob", 252), ("text", 252), ("vbin", 15)]
    after = [
        _integer("1"),
        _integer("18446744073709551615"),
        (NS + "Decimal", {"value": "0.000000000000000000000000000000012300", "precision": 40, "scale": 36}),
        (NS + "Timestamp", {"timestamp": 1700000000, "millis": 123456}),
        (NS + "Timestamp", {"timestamp": -9223372022400, "millis": 0}),
        _dt_item(year=2024, month=2, day=29),
        _dt_item(hour=-1, minute=2, second=3, millis=4),
        _dt_item(year=0, month=0, day=0, hour=0, minute=0, second=0),
        _dt_item(year=1999),
        (NS + "Float", {"value": 0.1, "precision": 8, "scale": 64}),
        (NS + "BinaryObject", {"type": "BLOB", "value": b"\x00\xff"}),
        _chars("文字".encode()),
        _chars(b"\x01\x02", "binary"),
    ]
    event = _one(_encode(_record(fields=fields, after=after)))
    image = event.after
    assert image is not None
    assert isinstance(image["u"], BigInt) and image["u"] == 2**64 - 1
    assert image["d"] == Decimal("0.000000000000000000000000000000012300")
    assert isinstance(image["d"], Decimal)
    assert image["d"].as_tuple() == (0, (1, 2, 3, 0, 0), -36)  # digits and trailing zeros kept
    assert image["ts"] == _dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)  # millis holds micros
    assert image["bad_ts"] == Unparsed("-9223372022400")
    assert image["day"] == _dt.date(2024, 2, 29)
    assert image["tm"] == SqlTime(-((1 * 60 + 2) * 60 + 3) * 1_000_000 - 4)
    assert image["dtm"] == Unparsed("0000-00-00 00:00:00")
    assert image["yr"] == 1999 and image["f"] == 0.1
    assert image["blob"] == b"\x00\xff" and image["text"] == "文字" and image["vbin"] == b"\x01\x02"
    logical = {c.name: c.logical_type for c in event.columns}
    assert logical == {
        "id": "integer",
        "u": "integer",
        "d": "decimal",
        "ts": "timestamp",
        "bad_ts": "timestamp",
        "day": "date",
        "tm": "time",
        "dtm": "datetime",
        "yr": "year",
        "f": "float64",
        "blob": "bytes",
        "text": "string",
        "vbin": "bytes",
    }
    d = next(c for c in event.columns if c.name == "d")
    assert (d.precision, d.scale) == (40, 36)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("charset", "raw", "text"),
    [
        ("latin1", b"caf\xe9 \x80", "café €"),  # MySQL latin1 is cp1252
        ("latin1", b"\x81\x9d", "\x81\x9d"),  # bytes cp1252 leaves undefined map to themselves
        ("gbk", "中文".encode("gbk"), "中文"),
        ("gb2312", "简体".encode("gb2312"), "简体"),
        ("big5", "繁體".encode("big5"), "繁體"),
        ("utf8", "é".encode(), "é"),
        ("UTF8MB4", "😀".encode(), "😀"),
    ],
)
def test_character_sets(charset: str, raw: bytes, text: str) -> None:
    after = _one(_encode(_record(after=[_integer("1"), _chars(raw, charset)]))).after
    assert after is not None and after["name"] == text


@pytest.mark.unit
def test_empty_object_none_is_absent_and_null_is_null() -> None:
    empty_none, empty_null = (NS + "EmptyObject", "NONE"), (NS + "EmptyObject", "NULL")
    fields = [("id", 8), ("a", 15), ("b", 15), ("c", 15)]
    before = [_integer("1"), empty_none, empty_null, None]
    after = [_integer("1"), _chars(b"x"), empty_null, empty_none]
    event = _one(_encode(_record("UPDATE", fields=fields, before=before, after=after)))
    assert event.before == {"id": 1, "b": None, "c": None}
    assert event.after == {"id": 1, "a": "x", "b": None}
    assert [c.name for c in event.columns] == ["id", "a", "b", "c"]


@pytest.mark.unit
def test_born_timestamp_variant_decodes_like_the_base_schema() -> None:
    record = _record(processTimestamps=None)
    base = _one(_encode(record))
    born = _one(_encode(record, born=1700000000999))
    assert base.ingest_ts_ms is None and born.ingest_ts_ms == 1700000000999
    assert (born.after, born.order_key, born.source) == (base.after, base.order_key, base.source)
    # processTimestamps[0], the delivery time OMS documents, wins when both are present.
    both = _one(_encode(_record(), born=1700000000999))
    assert both.ingest_ts_ms == 1700000000500


@pytest.mark.unit
def test_every_truncation_is_malformed() -> None:
    raw = _encode(_record(), born=1700000000999)
    accepted = {len(raw), len(_encode(_record()))}  # the born variant and its base prefix
    for cut in range(len(raw)):
        if cut in accepted:
            continue
        assert _code(raw[:cut]) == MALFORMED, cut
    assert _code(raw + b"\x00") == MALFORMED


@pytest.mark.unit
def test_object_name_escapes_and_parts() -> None:
    source = _one(_encode(_record(objectName="a\\u002Eb.c\\u002Ed"))).source
    assert (source.database, source.table) == ("a.b", "c.d")
    source = _one(_encode(_record(objectName="db.sch.tab"))).source
    assert (source.database, source.schema, source.table) == ("db", "sch", "tab")
    assert _code(_encode(_record(objectName="a.b.c.d"))) == BAD_FIELD
    assert _code(_encode(_record(objectName=None))) == MISSING_FIELD


@pytest.mark.unit
def test_control_operations_emit_no_event() -> None:
    heartbeat = parse(_encode(_record("HEARTBEAT", objectName=None)), CTX)
    assert heartbeat == Parsed([], heartbeats=[Heartbeat(1700000000000, None)], control="heartbeat")
    for operation, control in [("BEGIN", "transaction_begin"), ("COMMIT", "transaction_commit")]:
        parsed = parse(_encode(_record(operation, after=None)), CTX)
        assert parsed.events == [] and parsed.control == control


@pytest.mark.unit
def test_datetime_for_a_timestamp_column_uses_the_source_zone() -> None:
    ctx = ParseContext(source_timezone=zone("Asia/Shanghai"))
    after = [_integer("1"), _dt_item(year=2024, month=1, day=1, hour=8, minute=0, second=0)]
    image = _one(_encode(_record(fields=[("id", 8), ("ts", 7)], after=after)), ctx).after
    assert image is not None and image["ts"] == _dt.datetime(2024, 1, 1, tzinfo=UTC)


@pytest.mark.unit
@pytest.mark.parametrize(
    ("record", "code"),
    [
        (_record(after=[_integer("x1"), _chars(b"a")]), BAD_VALUE),
        (_record(after=[_integer("1"), _chars(b"\xff", "utf8")]), BAD_VALUE),
        (_record(after=[_integer("1"), _chars(b"a", "ebcdic")]), BAD_VALUE),
        (_record(after=[_integer("1")]), INCONSISTENT),
        (_record(after=[(NS + "EmptyObject", "NONE"), _chars(b"a")]), INCONSISTENT),
        (_record(before=[_integer("1"), _chars(b"a")]), INCONSISTENT),
        (_record("DELETE"), MISSING_FIELD),
        (_record("DDL", after=None), MISSING_FIELD),
        (_record(fields=None, after=None) | {"fields": None}, MISSING_FIELD),
        (_record(tags={"pk_uk_info": "{"}), BAD_FIELD),
        (_record(tags={"pk_uk_info": '{"PRIMARY": "id"}'}), BAD_FIELD),
        (_record(version=2), UNSUPPORTED),
        (_record("RDB"), None),
    ],
)
def test_rejects(record: dict[str, Any], code: str | None) -> None:
    raw = _encode(record)
    if code is None:
        assert parse(raw, CTX).events == []
    else:
        assert _code(raw) == code


@pytest.mark.unit
def test_json_is_wrong_format() -> None:
    assert _code(b'{"version": 1, "operation": "INSERT"}') == WRONG_FORMAT
    assert _code(b"{not json") == MALFORMED


@pytest.mark.unit
def test_no_primary_key() -> None:
    assert _one(_encode(_record(tags={}))).primary_key == []


@pytest.mark.unit
@settings(max_examples=400, deadline=None)
@given(data=st.binary(max_size=300), cut=st.integers(min_value=0, max_value=400), flip=st.integers(0, 255))
def test_never_raises_anything_but_reject(data: bytes, cut: int, flip: int) -> None:
    for raw in (data, _corpus("seed-insert")[:cut], bytes([flip]) + _corpus("seed-update")[1:]):
        with contextlib.suppress(RejectError):
            parse(raw, CTX)
