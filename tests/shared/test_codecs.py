"""The Avro encoding and the JSON view of the canonical event."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import fastavro
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.shared.codec import avro, json_view
from binlake.shared.event.model import ChangeEvent, Column, Ddl, Origin, Source
from binlake.shared.event.values import BigInt, SqlTime, Unparsed, Value, integer
from binlake.shared.kafka.records import event_key

pytestmark = pytest.mark.unit
UTC = dt.UTC


def _event(after: dict[str, Value] | None, before: dict[str, Value] | None = None) -> ChangeEvent:
    return ChangeEvent(
        op="UPDATE" if before is not None else "INSERT",
        source=Source("canal-json", "MYSQL", "db", None, "t", binlog_file="mysql-bin.000001", binlog_pos=4),
        order_key="00000000000000000001.00000000000000000002.000000",
        ts_ms=1,
        ingest_ts_ms=None,
        primary_key=["id"],
        columns=[Column("id", "bigint unsigned", "uint64")],
        before=before,
        after=after,
        changed_columns=None if before is None else ["id"],
        ddl=None,
        origin=Origin("topic", 3, 99, 1),
    )


ALL_KINDS: dict[str, Value] = {
    "null": None,
    "bool": True,
    "int": -(2**63),
    "big": BigInt(2**64 - 1),
    "negbig": BigInt(-(2**70)),
    "float": -0.5,
    "decimal": Decimal("-12345678901234567890.0123456789"),
    "tiny_decimal": Decimal("1E-400"),
    "text": "你好 🌍",
    "bytes": b"\x00\xff",
    "date": dt.date(1, 1, 1),
    "time": SqlTime(-3020399000000),
    "local": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
    "instant": dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC),
    "unparsed": Unparsed("0000-00-00"),
}


def test_every_value_kind_round_trips_through_avro() -> None:
    event = _event(ALL_KINDS, {"id": 1})
    decoded = avro.decode(avro.encode(event))
    assert decoded == event
    assert decoded.after is not None
    for name, value in ALL_KINDS.items():
        assert type(decoded.after[name]) is type(value), name


def test_ddl_event_round_trips() -> None:
    event = _event(None)
    event.op = "DDL"
    event.ddl = Ddl("ALTER TABLE t ADD c int", "ALTER_TABLE")
    event.columns = []
    assert avro.decode(avro.encode(event)) == event


def test_single_object_framing() -> None:
    message = avro.encode(_event({"id": 1}))
    assert message[:2] == b"\xc3\x01"
    assert message[2:10] == avro.fingerprint()
    # The fingerprint is the spec's CRC-64-AVRO of the parsing canonical form (fastavro agrees).
    canonical = fastavro.schema.to_parsing_canonical_form(avro.parsed_schema())
    assert fastavro.schema.fingerprint(canonical, "CRC-64-AVRO") == message[2:10].hex()
    with pytest.raises(avro.DecodeError, match="marker"):
        avro.decode(b"{}" + message[2:])
    with pytest.raises(avro.DecodeError, match="fingerprint"):
        avro.decode(message[:2] + b"\x00" * 8 + message[10:])
    with pytest.raises(avro.DecodeError, match="corrupt"):
        avro.decode(message[:20])


def test_every_released_schema_is_known() -> None:
    assert avro.released_versions()[-1] == avro.CURRENT_VERSION
    assert set(avro.schema_by_fingerprint().values()) == set(avro.released_versions())


def test_json_view_renderings() -> None:
    line = json.loads(json_view.render(_event(ALL_KINDS)))
    after = line["after"]
    assert after["int"] == -(2**63)
    assert after["big"] == "18446744073709551615"
    assert after["negbig"] == str(-(2**70))
    assert after["decimal"] == "-12345678901234567890.0123456789"
    assert after["tiny_decimal"] == "1E-400"
    assert after["bytes"] == "AP8="
    assert after["date"] == "0001-01-01"
    assert after["time"] == "-838:59:59"
    assert after["local"] == "9999-12-31T23:59:59.999999"
    assert after["instant"] == "1969-12-31T23:59:59.000001Z"
    assert after["unparsed"] == {"unparsed": "0000-00-00"}
    assert after["null"] is None
    assert line["source"]["binlog_pos"] == 4
    assert line["origin"] == {"topic": "topic", "partition": 3, "offset": 99, "row": 1}


@given(st.integers(min_value=-(2**100), max_value=2**100))
def test_integers_render_exactly(number: int) -> None:
    rendered = json.loads(json_view.render(_event({"n": integer(number)})))["after"]["n"]
    assert int(rendered) == number
    assert isinstance(rendered, int) == (-(2**63) <= number < 2**63)
    decoded = avro.decode(avro.encode(_event({"n": integer(number)})))
    assert decoded.after == {"n": number}


@given(st.decimals(allow_nan=False, allow_infinity=False) | st.sampled_from([Decimal("1E+3"), Decimal("-0E+3")]))
def test_decimals_round_trip_exactly(number: Decimal) -> None:
    decoded = avro.decode(avro.encode(_event({"d": number})))
    assert decoded.after is not None
    value = decoded.after["d"]
    assert isinstance(value, Decimal)
    assert value == number
    # The scale (digits after the point) survives; a positive exponent (no SQL
    # decimal has a negative scale) may come back written out in plain digits.
    exponent = number.as_tuple().exponent
    assert isinstance(exponent, int)
    if exponent <= 0:
        assert value.as_tuple().exponent == exponent


def test_kernel_writer_matches_fastavro_on_every_golden_event() -> None:
    from binlake.shared.parsing.result import Parsed
    from tests.corpus_cases import cases

    checked = 0
    for case in cases():
        outcome = case.run()
        if not isinstance(outcome, Parsed):
            continue
        for event in outcome.events:
            assert avro.encode_body(event) == avro.encode_body_reference(event), case.id
            checked += 1
    assert checked > 150


def test_kernel_writer_matches_fastavro_on_generated_traffic() -> None:
    from binlake.shared.generate import render
    from binlake.shared.generate.workload import Workload
    from binlake.shared.parsing import registry
    from binlake.shared.parsing.context import ParseContext
    from binlake.shared.parsing.result import Parsed

    for format_id in ("canal-json", "debezium-json", "oms-avro"):
        parse = render.parse_options(format_id)
        ctx = ParseContext(source_table=parse.get("source_table"), options=dict(parse.get("options", {})))
        render_fn = render.get(format_id)
        for change in Workload(seed=2, tables=2).run(150):
            outcome = registry.get(format_id)(render_fn(change, render.RenderContext()), ctx)
            assert isinstance(outcome, Parsed)
            for event in outcome.events:
                assert avro.encode_body(event) == avro.encode_body_reference(event)


@given(st.lists(st.sampled_from(list(ALL_KINDS.values())), max_size=20), st.integers(-(2**63), 2**63 - 1))
def test_kernel_writer_matches_fastavro_on_any_values(values: list[Value], number: int) -> None:
    event = _event({f"c{i}": v for i, v in enumerate(values)} | {"n": number}, {"id": BigInt(2**64 - 1)})
    assert avro.encode_body(event) == avro.encode_body_reference(event)


def test_kernel_writer_matches_fastavro_at_varint_boundaries() -> None:
    # The writer builds varints from 14-bit groups: check every group count,
    # on both sides of each power of two, in values and envelope longs.
    numbers = [0, 1, -1, 63, -64, 64, -65, -(2**63), 2**63 - 1]
    for bits in range(1, 63):
        numbers += [2**bits - 1, 2**bits, -(2**bits), -(2**bits) - 1]
    for number in numbers:
        event = _event({"n": number, "local": dt.datetime(1, 1, 1), "instant": dt.datetime(9999, 12, 31, tzinfo=UTC)})
        event.ts_ms = number
        event.origin.offset = abs(number) if number != -(2**63) else 0
        assert avro.encode_body(event) == avro.encode_body_reference(event), number


def _reference_key(event: ChangeEvent) -> bytes:
    """``event_key`` as the Python codec wrote it before the kernel did: orjson of the identity, each key
    value in its JSON view."""
    s = event.source
    identity: list[object] = [s.database, s.schema, s.table]
    image = event.after if event.after is not None else event.before
    if event.primary_key and image is not None:
        identity.append([json_view.render_value(image.get(name)) for name in event.primary_key])
    return orjson.dumps(identity)


@given(st.lists(st.sampled_from(sorted(ALL_KINDS)), min_size=1, max_size=4))
def test_record_key_renders_every_value_kind_as_the_json_view(names: list[str]) -> None:
    event = _event(dict(ALL_KINDS))
    event.primary_key = names
    assert event_key(event) == _reference_key(event)


def test_record_key_of_an_event_without_key_values() -> None:
    event = _event({"other": 1})  # the key column is absent from the image: null
    assert event_key(event) == b'["db",null,"t",[null]]'
    deleted = _event(None, {"id": 'é"\n'})
    deleted.op = "DELETE"
    assert event_key(deleted) == _reference_key(deleted) == '["db",null,"t",["é\\"\\n"]]'.encode()
    ddl = _event(None)
    ddl.primary_key = []
    ddl.source.database = None
    assert event_key(ddl) == b'[null,null,"t"]'


def test_kernel_writer_matches_the_reference_keys_on_every_golden_event() -> None:
    from binlake.shared.parsing.result import Parsed
    from tests.corpus_cases import cases

    for case in cases():
        outcome = case.run()
        if isinstance(outcome, Parsed):
            for event in outcome.events:
                assert avro.encoder().record(event) == (_reference_key(event), avro.encode(event)), case.id


@pytest.mark.parametrize(
    ("value", "error", "words"),
    [
        (object(), TypeError, "not a canonical value: object"),
        (2**63, OverflowError, "beyond int64"),
        ([1], TypeError, "not a canonical value: list"),
        ("\ud800", UnicodeEncodeError, "surrogate"),
    ],
)
def test_kernel_writer_refuses_what_no_canonical_event_holds(value: object, error: type, words: str) -> None:
    with pytest.raises(error, match=words):
        avro.encode(_event({"v": value}))  # type: ignore[dict-item]
