"""Renderers of the OMS family and Debezium: every generated change parses back to itself."""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
from collections import defaultdict
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import fastavro
import orjson
import pytest

from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import BigInt, SqlTime
from binlake.shared.generate import render
from binlake.shared.generate.compare import check_event, equivalent
from binlake.shared.generate.render import RenderContext
from binlake.shared.generate.render.oms_family import _dts_schema, _java_double, render_oms_shareplex
from binlake.shared.generate.workload import Change, Workload
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext

FORMATS = (
    "oms-default",
    "oms-extend-column-type",
    "oms-dataworks",
    "oms-shareplex",
    "oms-avro",
    "debezium-json",
    "debezium-smt",
)
SHANGHAI = ZoneInfo("Asia/Shanghai")
CHANGES = 400


def _changes(seed: int) -> list[Change]:
    return list(Workload(seed=seed, tables=3).run(CHANGES))


def _parse_ctx(fmt: str, zone: dt.tzinfo, offset: int) -> ParseContext:
    options = render.parse_options(fmt)
    return ParseContext(
        topic=f"gen.{fmt}",
        partition=0,
        offset=offset,
        source_table=options.get("source_table"),
        source_timezone=zone,
        options=dict(options.get("options", {})),
    )


def _round_trip(fmt: str, seed: int, zone: dt.tzinfo, options: dict[str, Any] | None = None) -> None:
    renderer = render.get(fmt)
    parser = registry.get(fmt)
    flags = render.flags(fmt)
    ctx = RenderContext(zone=zone, options=options or {})
    by_table: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for offset, change in enumerate(_changes(seed)):
        raw = renderer(change, ctx)
        parsed = parser.parse(raw, _parse_ctx(fmt, zone, offset))
        assert len(parsed.events) == 1, (change.sequence, parsed)
        event = parsed.events[0]
        problems = check_event(
            change,
            event,
            zone=zone,
            partial_before=flags.partial_before,
            partial_after=flags.partial_after,
            upsert=flags.upsert,
        )
        assert problems == [], (fmt, change.sequence, change.op, problems)
        by_table[change.table].append((event.order_key, change.sequence))
    for table, keyed in by_table.items():
        in_key_order = [sequence for _, sequence in sorted(keyed)]
        assert in_key_order == [sequence for _, sequence in keyed], f"{fmt} {table}: order_key misorders"
        assert len({key for key, _ in keyed}) == len(keyed), f"{fmt} {table}: order_key ties"


@pytest.mark.unit
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("seed", [1, 7, 2024])
def test_round_trip_utc(fmt: str, seed: int) -> None:
    _round_trip(fmt, seed, dt.UTC)


@pytest.mark.unit
@pytest.mark.parametrize("fmt", FORMATS)
def test_round_trip_source_zone_shanghai(fmt: str) -> None:
    # SharePlex meta.time/posttime are wall clocks of the source zone; the rest carry instants.
    _round_trip(fmt, 11, SHANGHAI)


@pytest.mark.unit
@pytest.mark.parametrize("fmt", ["oms-default", "oms-extend-column-type", "oms-dataworks", "oms-shareplex"])
def test_round_trip_oceanbase_tenant(fmt: str) -> None:
    _round_trip(fmt, 3, dt.UTC, {"tenant": "t1"})


def _first(changes: list[Change], op: str) -> Change:
    return next(change for change in changes if change.op == op)


@pytest.mark.unit
def test_shareplex_wall_clock_and_partial_update() -> None:
    changes = _changes(1)
    update = _first(changes, "UPDATE")
    doc = json.loads(render_oms_shareplex(update, RenderContext(zone=SHANGHAI)))
    assert update.before is not None and update.after is not None
    changed = {name for name in update.after if update.after[name] != update.before[name]}
    assert set(doc["data"]) == changed
    assert set(doc["key"]) == set(update.before)
    local = dt.datetime.fromtimestamp(update.ts_ms / 1000, SHANGHAI).replace(tzinfo=None)
    assert doc["meta"]["time"] == local.isoformat(timespec="seconds")
    assert doc["meta"]["scn"] == str(update.ts_ms * 100_000 + update.sequence)
    event = (
        registry.get("oms-shareplex").parse(json.dumps(doc).encode(), ParseContext(source_timezone=SHANGHAI)).events[0]
    )
    assert event.ts_ms == update.ts_ms
    assert event.changed_columns == sorted(changed, key=list(update.after).index)


@pytest.mark.unit
def test_oms_default_renderings() -> None:
    change = _first(_changes(1), "INSERT")
    raw = render.get("oms-default")(change, RenderContext())
    doc = json.loads(raw, parse_float=Decimal)
    after = change.after
    assert after is not None
    post = doc["postStruct"]
    meta = doc["allMetaData"]
    assert meta["storeDataSequence"] == str(change.ts_ms * 100_000 + change.sequence)
    assert meta["db"] == change.database and meta["dbType"] == "MYSQL"
    assert post["price"] == after["price"]  # digits and scale kept, never through float
    ratio = after["ratio"]
    assert isinstance(ratio, float) and post["ratio"] == Decimal(ratio)  # the exact expansion
    payload = after["payload"]
    assert isinstance(payload, bytes) and base64.b64decode(post["payload"]) == payload
    updated = after["updated_at"]
    assert isinstance(updated, dt.datetime)
    seconds, _, fraction = post["updated_at"].partition(".")
    assert int(seconds) == int(updated.timestamp()) and not fraction.endswith("0")
    extend = json.loads(render.get("oms-extend-column-type")(change, RenderContext()))
    light = extend["postStruct"]["__light_type"]
    assert light["id"] == {"schemaType": "BIGINT"} and light["updated_at"] == {"schemaType": "TIMESTAMP"}


@pytest.mark.unit
def test_beyond_int64_keys_and_negative_times_round_trip() -> None:
    """The workload's unsigned keys beyond int64 and negative TIMEs reach every format."""
    changes = _changes(7)
    assert any(isinstance(change.key, BigInt) for change in changes)
    negative = [
        change
        for change in changes
        if change.after is not None and isinstance(change.after["alarm"], SqlTime) and change.after["alarm"].micros < 0
    ]
    assert negative
    big = next(change for change in changes if change.op == "INSERT" and isinstance(change.key, BigInt))
    for fmt in FORMATS:
        for change in (negative[0], big):
            raw = render.get(fmt)(change, RenderContext())
            event: ChangeEvent = registry.get(fmt).parse(raw, _parse_ctx(fmt, dt.UTC, 0)).events[0]
            assert change.after is not None and event.after is not None
            for name in ("id", "alarm"):
                assert equivalent(change.after[name], event.after[name]), (fmt, name, event.after[name])


@pytest.mark.unit
def test_oms_avro_is_a_plain_dts_record() -> None:
    change = _first(_changes(1), "UPDATE")
    raw = render.get("oms-avro")(change, RenderContext())
    stream = io.BytesIO(raw)
    record: Any = fastavro.schemaless_reader(stream, _dts_schema(), None, return_record_name=True)
    assert stream.tell() == len(raw)  # no header, no trailing bytes
    assert record["id"] == change.ts_ms * 100_000 + change.sequence
    assert record["objectName"] == f"{change.database}.{change.table}"
    kinds = {
        field["name"]: item[0].rsplit(".", 1)[-1]
        for field, item in zip(record["fields"], record["afterImages"], strict=True)
        if item is not None
    }
    expected = {
        "id": "Integer", "qty": "Integer", "price": "Decimal", "ratio": "Float", "name": "Character",
        "note": "Character", "created_at": "DateTime", "updated_at": "Timestamp", "birthday": "DateTime",
        "alarm": "DateTime", "payload": "BinaryObject", "doc": "TextObject", "active": "Integer",
    }  # fmt: skip
    assert kinds == {name: kind for name, kind in expected.items() if name in kinds}


@pytest.mark.unit
def test_debezium_envelope() -> None:
    change = _first(_changes(1), "INSERT")
    doc = json.loads(render.get("debezium-json")(change, RenderContext()))
    source = doc["payload"]["source"]
    assert (source["file"], source["pos"], source["connector"]) == (change.binlog_file, change.binlog_pos, "mysql")
    assert doc["payload"]["op"] == "c"
    fields = {f["field"]: f for f in doc["schema"]["fields"][1]["fields"]}
    assert fields["price"]["parameters"] == {"scale": "10", "connect.decimal.precision": "38"}
    assert fields["created_at"]["name"] == "io.debezium.time.MicroTimestamp"
    assert fields["updated_at"]["name"] == "io.debezium.time.ZonedTimestamp"
    assert fields["alarm"]["name"] == "io.debezium.time.MicroTime"
    assert fields["birthday"]["name"] == "io.debezium.time.Date"
    smt = json.loads(render.get("debezium-smt")(_first(_changes(1), "DELETE"), RenderContext()))
    assert set(smt) == {"schema", "payload"}
    assert smt["payload"]["__deleted"] == "true" and "__op" not in smt["payload"]


@pytest.mark.unit
@pytest.mark.parametrize(
    ("value", "text"),
    [(0.0, "0.0"), (-1.5, "-1.5"), (1e-300, "1.0E-300"), (3.141592653589793, "3.141592653589793"),
     (12345678.0, "1.2345678E7"), (0.001, "0.001"), (0.0001, "1.0E-4")],
)  # fmt: skip
def test_java_double_text(value: float, text: str) -> None:
    assert orjson.dumps(_java_double(value)) == text.encode()
    assert float(text) == value
