"""OceanBase OMS SharePlex parser: ops, partial updates, times, order keys, rejects."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from binlake.services.oms_shareplex.parser import parse
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.errors import RejectError
from tests.support.order_support import assert_strictly_increasing, kafka_key, keys_in_input_order

CTX = ParseContext(topic="sp", partition=0, offset=7)


def message(op: Any, data: Any = None, key: Any = None, sql: Any = None, **meta_fields: Any) -> bytes:
    meta: dict[str, Any] = {
        "posttime": "2020-12-07T13:22:00",
        "op": op,
        "size": 1,
        "time": "2020-11-25T00:01:02",
        "idx": "1/1",
        "seq": 1,
        "table": "shop.orders",
        "rowid": "shop.orders-1",
        "trans": "tx-1",
        "scn": "160626246200000001",
    }
    meta.update(meta_fields)
    doc: dict[str, Any] = {"data": data, "meta": meta}
    if key is not None:
        doc["key"] = key
    if sql is not None:
        doc["sql"] = sql
    return json.dumps(doc).encode()


def one(raw: bytes, ctx: ParseContext = CTX) -> ChangeEvent:
    parsed = parse(raw, ctx)
    assert len(parsed.events) == 1
    return parsed.events[0]


@pytest.mark.unit
def test_insert_values_and_source() -> None:
    raw = (
        b'{"data": {"id": 3, "u": 10223372036854775806, "d": 1.2222, "t": "2020-11-25 00:01:02.012345 Asia/Shanghai",'
        b' "n": null}, "meta": {"op": "ins", "time": "2020-11-25T00:01:02", "posttime": "2020-12-07T13:22:00",'
        b' "seq": 1, "table": "mock_database.mock_table", "rowid": "x", "trans": "tx", "scn": "123456789"}}'
    )
    event = one(raw)
    assert event.op == "INSERT" and event.before is None
    after = event.after
    assert after is not None
    assert isinstance(after["u"], BigInt) and after["d"] == Decimal("1.2222")
    assert after["t"] == "2020-11-25 00:01:02.012345 Asia/Shanghai"  # untyped: stays text
    assert after["n"] is None
    assert event.primary_key == [] and all(column.inferred for column in event.columns)
    src = event.source
    assert (src.format, src.db_type, src.database, src.table, src.tenant) == (
        "oms-shareplex",
        None,
        "mock_database",
        "mock_table",
        None,
    )
    assert (src.scn, src.sequence, src.transaction_id) == ("123456789", "1", "tx")
    assert event.ts_ms == 1606262462000 and event.ingest_ts_ms == 1607347320000
    assert event.order_key == kafka_key(7, partition=0)  # meta.scn is not a log position


@pytest.mark.unit
def test_update_after_is_key_overlaid_with_data_and_changed_columns_are_data_keys() -> None:
    # Issue 16, item 15: seed 004 says ``key`` holds the values before the change (its sample has
    # every column), so the row after the change is ``key`` with ``data``'s changed values; before,
    # ``after`` held only the changed columns and the unchanged ones ("id") read as unknown.
    prior = {"id": 1, "status": "NEW", "note": None, "qty": 3}
    event = one(message("upd", data={"status": None, "note": "x"}, key=prior))
    assert event.op == "UPDATE"
    assert event.before == prior
    assert event.after == {"id": 1, "status": None, "note": "x", "qty": 3}
    assert list(event.after) == ["id", "status", "note", "qty"]  # key's column order
    assert event.changed_columns == ["status", "note"]
    # A changed column the prior row lacks (the seed's own sample): kept, after key's columns.
    extra = one(message("upd", data={"string": "hello world 2020"}, key={"id": 1}))
    assert extra.after == {"id": 1, "string": "hello world 2020"} and extra.changed_columns == ["string"]
    assert [c.name for c in extra.columns] == ["id", "string"]


@pytest.mark.unit
def test_seed_update_after_image_is_full() -> None:
    corpus = Path(__file__).parents[2] / "corpus" / "oms-shareplex"
    event = one((corpus / "seed-update.in.json").read_bytes())
    assert event.before is not None and event.after is not None
    assert set(event.after) == set(event.before) | {"string"}
    assert all(event.after[name] == value for name, value in event.before.items())
    assert event.after["string"] == "hello world 2020"


@pytest.mark.unit
def test_delete_and_ddl() -> None:
    delete = one(message("DEL", data={"id": 1}))
    assert delete.op == "DELETE" and delete.before == {"id": 1} and delete.after is None
    ddl = one(message("ddl", data={}, sql={"ddl": "alter table shop.orders add c int"}, scn="null", trans=None))
    assert ddl.op == "DDL" and ddl.ddl is not None and ddl.ddl.kind == "ALTER_TABLE"
    assert ddl.source.scn is None and ddl.source.transaction_id is None
    assert ddl.order_key == kafka_key(7, partition=0)
    truncate = one(message("ddl", data={}, sql={"ddl": "TRUNCATE TABLE shop.orders"}))
    assert truncate.op == "TRUNCATE"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("table", "expected"),
    [
        ("orders", (None, None, "orders")),
        ("shop.orders", (None, "shop", "orders")),
        ("ten.shop.orders", ("ten", "shop", "orders")),
    ],
)
def test_table_names(table: str, expected: tuple[str | None, str | None, str | None]) -> None:
    src = one(message("ins", data={"id": 1}, table=table)).source
    assert (src.tenant, src.database, src.table) == expected


@pytest.mark.unit
def test_times_are_wall_clocks_in_source_zone() -> None:
    shanghai = ParseContext(source_timezone=zone("Asia/Shanghai"))
    event = one(message("ins", data={"id": 1}, scn=None), shanghai)
    assert event.ts_ms == 1606233662000  # 2020-11-25T00:01:02+08:00
    assert event.ingest_ts_ms == 1607318520000  # 2020-12-07T13:22:00+08:00


@pytest.mark.unit
def test_issue16_same_second_earlier_time_and_null_scn_keep_input_order() -> None:
    # Before: scn when numeric, else meta.time ms * 10^5: two updates of a row in one second with
    # scn "null" tied, an earlier meta.time at a later offset sorted first, and the DDL (scn
    # "null") compared with numeric scns on another scale.
    update = {"data": {"v": 2}, "key": {"id": 1, "v": 1}}
    messages = [
        message("upd", **update, scn="null"),
        message("upd", **update, scn="null"),
        message("upd", **update, scn="null", time="2020-11-24T23:59:59"),
        message("upd", **update, scn="99999999999999999999"),
        message("ddl", data={}, sql={"ddl": "TRUNCATE TABLE shop.orders"}, scn="null", time="2000-01-01T00:00:00"),
        message("ins", data={"id": 1}, scn="1"),
    ]
    assert_strictly_increasing(keys_in_input_order(parse, messages))


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raw", "code", "reason"),
    [
        (b"not json", "malformed", "invalid JSON"),
        (b"[1]", "wrong_format", "SharePlex"),
        (b'{"data": {"id": 1}}', "wrong_format", "SharePlex"),
        (b'{"data": {"id": 1}, "meta": null}', "missing_field", "meta"),
        (b'{"data": {"id": 1}, "meta": [1]}', "bad_field", "meta"),
        (message(3, data={"id": 1}), "bad_field", "meta.op"),
        (message("upsert", data={"id": 1}), "unsupported", "upsert"),
        (message("ins", data={"id": 1}, time="yesterday"), "bad_field", "meta.time"),
        (message("ins", data={"id": 1}, posttime="2020-13-01T00:00:00"), "bad_field", "meta.posttime"),
        (message("ins", data={"id": 1}, table=None), "missing_field", "meta.table"),
        (message("ins", data={"id": 1}, table={"a": 1}), "bad_field", "table"),
        (message("ins", data=None), "missing_field", "data"),
        (message("del", data="x"), "bad_field", "data"),
        (message("upd", data={"v": 1}), "missing_field", "key"),
        (message("upd", data={"v": 1}, key={}), "missing_field", "key"),
        (message("upd", data={"v": 1}, key=[1]), "bad_field", "key"),
        (message("ddl", data={}, sql={"ddl": ""}), "missing_field", "sql.ddl"),
        (message("ddl", data={}, sql="alter table x"), "bad_field", "sql"),
    ],
)
def test_rejects(raw: bytes, code: str, reason: str) -> None:
    with pytest.raises(RejectError) as info:
        parse(raw, CTX)
    assert info.value.code == code, info.value.reason
    assert reason in info.value.reason
