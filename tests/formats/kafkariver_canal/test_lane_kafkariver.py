"""The kafkariver-canal lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic in three
zones, on an UPDATE's before image for every column type (``updated`` flags,
``origin_val`` absent, null, empty), on messages whose values and envelope
fields hypothesis mutates, and on flipped bytes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.cli.generate import messages
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, Taken, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "kafkariver-canal"
TOPIC = "vendor.topic"
ZONES = ["UTC", "Asia/Shanghai", "America/New_York"]


def context(zone_name: str = "UTC", **options: str) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=dict(options))


LANES: dict[str, Lane] = {}


def the_lane(zone_name: str = "UTC") -> Lane:
    if zone_name not in LANES:
        lane = lane_for(FORMAT, context(zone_name))
        assert lane is not None
        LANES[zone_name] = lane
    return LANES[zone_name]


def python_records(raw: bytes, ctx: ParseContext, offset: int) -> Taken | None:
    """What the runtime publishes for ``raw`` through the Python parser, in the lane's shape (None: a reject)."""
    return python_records_of(FORMAT, raw, ctx, TOPIC, offset)


def check(raw: bytes, zone_name: str = "UTC", offset: int = 41) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    fast = the_lane(zone_name).parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(raw, context(zone_name), offset), raw[:400]
    return True


def dump(doc: dict[str, Any]) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()


def test_golden_corpus() -> None:
    seen, taken = corpus_agreement(FORMAT, TOPIC)
    # insert, update, delete, the null flags and the old values; the other cases are rejects or
    # hold untyped columns, BIT / zero-date values or numbers as values.
    assert seen >= 15 and taken >= 5


@pytest.mark.parametrize("zone_name", ZONES)
@pytest.mark.parametrize("seed", [1, 2024])
def test_generated_traffic(seed: int, zone_name: str) -> None:
    items = messages(FORMAT, Workload(seed=seed, tables=4), 1500, zone_name)
    taken = sum(check(raw, zone_name, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message
    assert the_lane(zone_name).planned() >= 1


TYPES = {
    "id": "bigint(20) unsigned",
    "qty": "int(11)",
    "price": "decimal(10,4)",
    "ratio": "double",
    "name": "varchar(64)",
    "flag": "tinyint(1)",
    "ok": "boolean",
    "payload": "blob",
    "born": "date",
    "alarm": "time",
    "at": "datetime(6)",
    "stamp": "timestamp(3)",
    "y": "year",
    "doc": "json",
    "bits": "bit(8)",
}
VALUES = {
    "id": "18446744073709551615",
    "qty": "-5",
    "price": "12.5000",
    "ratio": "1.0E-300",
    "name": '名字 "q"',
    "flag": "1",
    "ok": "true",
    "payload": "\u00e4\u00ff\u0000",
    "born": "2024-02-29",
    "alarm": "-838:59:59",
    "at": "2024-03-10 02:30:00.000001",
    "stamp": "2024-11-03 01:30:00.500",
    "y": "2155",
    "doc": '{"k": [1, 2]}',
    "bits": "\u0001",
}


def column(name: str, value: str | None, **extra: Any) -> dict[str, Any]:
    return {"n": name, "t": TYPES[name], "v": "" if value is None else value, "null": value is None, **extra}


BASE: dict[str, Any] = {
    "binlog": "6816@mysql-bin.000070",
    "time": 1450235092000,
    "canalTime": 1450235093370,
    "db": "TestCanal",
    "table": "g_order_010",
    "event": "i",
    "columns": [column(name, VALUES[name]) for name in TYPES if name != "bits"],
    "keys": ["id"],
}


def with_columns(columns: list[dict[str, Any]], **fields: Any) -> bytes:
    return dump({**BASE, "columns": columns, **fields})


def test_takes_and_declines() -> None:
    assert check(dump(BASE))
    columns = BASE["columns"]
    taken = [
        {**BASE, "event": "d"},
        {**BASE, "event": "U"},
        {**BASE, "keys": None},
        {**{k: v for k, v in BASE.items() if k not in ("keys", "time", "canalTime")}},
        {**BASE, "db": "", "keys": ["name", "qty"]},
        {**BASE, "binlog": "0004@mysql-bin.000001", "time": None},
        {**BASE, "binlog": "7@a@b-3"},  # the file is what follows the first @
        {**BASE, "columns": [{**c, "null": True, "v": 5} for c in columns]},  # null wins over v
        {**BASE, "columns": [{k: v for k, v in c.items() if k != "null"} for c in columns]},
        {**BASE, "columns": [{"n": "id", "t": "bigint", "v": None}]},  # a null v without a flag
        {**BASE, "columns": [{**c, "extra": [1]} for c in columns]},  # members the parser ignores
    ]
    for doc in taken:
        assert check(dump(doc)), doc
    declined = [
        {**BASE, "event": "t"},
        {**BASE, "event": " i"},
        {**BASE, "binlog": "mysql-bin.000070"},
        {**BASE, "binlog": "6816@mysql-bin.000070 "},
        {**BASE, "binlog": "9223372036854775808@mysql-bin.000070"},
        {**BASE, "binlog": "1@mysql-bin"},  # no index: a reject
        {**BASE, "keys": ["missing"]},
        {**BASE, "keys": ["payload"]},  # a binary key column
        {**BASE, "time": "1450235092000"},
        {**BASE, "table": ""},
        {**BASE, "columns": []},
        {**BASE, "columns": [*columns, columns[0]]},  # a column twice
        {**BASE, "columns": [{**columns[0], "t": ""}]},  # untyped: inferred
        {**BASE, "columns": [{k: v for k, v in columns[0].items() if k != "t"}]},
        {**BASE, "columns": [{**columns[0], "v": 5}]},  # a number as the value
        {**BASE, "columns": [{**columns[0], "null": False, "v": None}]},
        {**BASE, "columns": [{k: v for k, v in columns[0].items() if k != "v"}]},
        {**BASE, "columns": [column("bits", "\u0001")], "keys": []},
        {**BASE, "columns": [column("born", "0000-00-00")], "keys": []},
    ]
    for doc in declined:
        assert the_lane().parse(dump(doc), TOPIC, 3, 0) is None, doc
    assert the_lane().parse(b'{"event": "i", "event": "i"}', TOPIC, 3, 0) is None
    assert the_lane().parse(b"", TOPIC, 3, 0) is None


def test_options_turn_it_off() -> None:
    assert lane_for(FORMAT, context(bytes_encoding="base64")) is None
    assert lane_for(FORMAT, context(bytes_encoding="latin1")) is not None


@pytest.mark.parametrize("zone_name", ["UTC", "Asia/Shanghai"])
@pytest.mark.parametrize("name", sorted(TYPES))
def test_update_before_image(name: str, zone_name: str) -> None:
    """Every way a column's old value is given (or not), for every column type."""
    others = [column(n, VALUES[n], updated=False) for n in ("id", "qty") if n != name]
    new = VALUES[name]
    forms: list[dict[str, Any]] = [
        column(name, new, updated=True, origin_val=""),  # an old NULL: unknown unless text/binary
        column(name, new, updated=True, origin_val=None),
        column(name, new, updated=True),  # no old value: unknown
        column(name, new, updated=False),
        column(name, new),  # no flag: unknown, not changed
        column(name, new, updated=None),
        column(name, None, updated=True, origin_val=VALUES[name]),
        column(name, new, updated=True, origin_val=new),
        column(name, new, updated=True, origin_val="x"),  # a reject for most types
        column(name, new, updated="yes"),  # a reject
        column(name, new, updated=True, origin_val=7),
    ]
    taken = [check(with_columns([*others, form], event="u"), zone_name) for form in forms]
    if name != "bits":  # BIT values go to the Python parser
        assert taken[:8] == [True] * 8, taken


@pytest.mark.parametrize("zone_name", ZONES)
def test_timestamps_in_gaps_and_folds(zone_name: str) -> None:
    for text in [
        "2024-03-10 02:30:00",
        "2024-11-03 01:30:00.123",
        "2024-03-31 02:30:00",
        "2024-10-27 02:30:00",
        "1900-01-01 00:00:00",
    ]:
        assert check(with_columns([column("id", "1"), column("stamp", text)]), zone_name), text
    # The ends of the datetime range: out of range once moved to UTC in some zones.
    for text in ["0001-01-01 00:00:00", "9999-12-31 23:59:59.999"]:
        check(with_columns([column("id", "1"), column("stamp", text)]), zone_name)


TEMPLATE = messages(FORMAT, Workload(seed=5, tables=2), 80, "UTC")
DOCS = [json.loads(raw) for _, raw in TEMPLATE]
UPDATES = [doc for doc in DOCS if doc["event"] == "u"]

EDGE_TEXTS = [
    "", "0", "-0", "1", "-1", "01", "1.5", "1.50", "-0.5", ".5", "5.", "1e5", "1E-300", "1e400", "NaN", "true",
    "false", "TRUE", " 1", "1 ", "9223372036854775807", "9223372036854775808", "18446744073709551616",
    "9" * 39, "2024-02-29", "2023-02-29", "0000-00-00", "2024-01-01 00:00:00", "2024-01-01T00:00:00.1234567",
    "2024-01-01 24:00:00", "838:59:59", "-00:00:01.5", "99:60:00", "\u00ff\u0100", "x", "名字", "\u0000",
    "1.0E7", "-1.2510357E7", "123456789012345678901234567890123456789012.5",
]  # fmt: skip
texts = st.one_of(
    st.sampled_from(EDGE_TEXTS),
    st.text(max_size=12),
    st.from_regex(r"-?[0-9]{1,4}([.:-][0-9]{1,3}){0,3}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,7})?)?", fullmatch=True),
)
json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)


@settings(max_examples=600)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    position=st.integers(min_value=0, max_value=12),
    member=st.sampled_from(["v", "origin_val", "null", "updated", "t", "n"]),
    value=texts | json_scalars,
    zone_name=st.sampled_from(ZONES),
)
def test_mutated_columns(index: int, position: int, member: str, value: Any, zone_name: str) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    doc["columns"][position % len(doc["columns"])][member] = value
    check(dump(doc), zone_name)


@settings(max_examples=300)
@given(
    index=st.integers(min_value=0, max_value=len(UPDATES) - 1),
    flags=st.lists(st.sampled_from([None, True, False, "drop"]), min_size=13, max_size=13),
    olds=st.lists(st.sampled_from([None, "", "drop", "same", "1", "2024-01-01"]), min_size=13, max_size=13),
)
def test_mutated_updates(index: int, flags: list[Any], olds: list[Any]) -> None:
    doc = json.loads(json.dumps(UPDATES[index]))
    for entry, flag, old in zip(doc["columns"], flags, olds, strict=False):
        if flag == "drop":
            entry.pop("updated", None)
        else:
            entry["updated"] = flag
        if old == "drop":
            entry.pop("origin_val", None)
        else:
            entry["origin_val"] = entry["v"] if old == "same" else old
    check(dump(doc))


@settings(max_examples=400)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from(["binlog", "time", "canalTime", "db", "table", "event", "columns", "keys"]),
    value=json_scalars
    | st.lists(json_scalars, max_size=3)
    | st.sampled_from(["i", "u", "d", "I", "x", "1@f-1", "00@f1", "1@", "@f1", "1@f\u0663", "5@bin.1 ", "\u00a05@b1"])
    | st.from_regex(r"[0-9]{0,21}@[a-z.\-]{0,5}[0-9]{0,22}[a-z]{0,2}", fullmatch=True),
    drop=st.booleans(),
)
def test_mutated_envelope(index: int, field: str, value: Any, drop: bool) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    if drop:
        doc.pop(field, None)
    else:
        doc[field] = value
    try:
        raw = dump(doc)
    except ValueError:
        return
    check(raw)


@settings(max_examples=300)
@given(index=st.integers(min_value=0, max_value=len(TEMPLATE) - 1), data=st.data())
def test_flipped_bytes(index: int, data: st.DataObject) -> None:
    raw = bytearray(TEMPLATE[index][1])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    check(bytes(raw))
    check(bytes(raw[: data.draw(st.integers(0, len(raw)))]))
