"""The Maxwell lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic, and on
messages whose values (raw JSON texts at the edges of each reading), envelope
fields and bytes hypothesis mutates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.cli.generate import messages
from binlake.shared.errors import ConfigError
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, Taken, available, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "maxwell-json"
TOPIC = "vendor.topic"


def context(zone_name: str = "UTC", **options: str) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=dict(options))


def the_lane(ctx: ParseContext | None = None) -> Lane:
    lane = lane_for(FORMAT, ctx or context())
    assert lane is not None
    return lane


LANE = the_lane() if available() else None
POSITION_CTX = context(order="position")
POSITION_LANE = the_lane(POSITION_CTX) if available() else None


def python_records(raw: bytes, ctx: ParseContext, offset: int) -> Taken | None:
    """What the runtime publishes for ``raw`` through the Python parser, in the lane's shape (None: a reject)."""
    return python_records_of(FORMAT, raw, ctx, TOPIC, offset)


def check(raw: bytes, ctx: ParseContext | None = None, offset: int = 41, position: bool = False) -> bool:
    """Assert the lane agrees with Python on ``raw`` (under option order=position with ``position``);
    True when the lane took it."""
    lane = POSITION_LANE if position else LANE
    assert lane is not None
    fast = lane.parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(raw, ctx or (POSITION_CTX if position else context()), offset), raw[:400]
    return True


def check_both(raw: bytes, offset: int = 41) -> bool:
    """``check`` under both orders; True when the default (Kafka order) lane took it."""
    check(raw, offset=offset, position=True)
    return check(raw, offset=offset)


def test_golden_corpus() -> None:
    seen, taken = corpus_agreement(FORMAT, TOPIC)
    assert taken >= 10
    assert seen >= 40  # option order (kafka or position) keeps the lane on


@pytest.mark.parametrize("seed", [1, 2024])
def test_generated_traffic(seed: int) -> None:
    items = messages(FORMAT, Workload(seed=seed, tables=4), 3000, "UTC")
    taken = sum(check(raw, offset=offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message
    positioned = sum(check(raw, offset=offset, position=True) for offset, (_, raw) in enumerate(items))
    assert positioned == len(items)  # each carries a position


BASE: dict[str, Any] = {
    "database": "shop",
    "table": "t",
    "type": "insert",
    "ts": 1735689600,
    "xid": 1001,
    "commit": True,
    "position": "mysql-bin.000001:204",
    "server_id": 1,
    "primary_key": [1],
    "primary_key_columns": ["id"],
    "data": {"id": 1, "v": "x", "d": 1.5, "j": {"k": [1, "a", None, True]}, "n": None, "b": False},
}


WITHOUT_POSITION = {k: v for k, v in BASE.items() if k != "position"}


def test_takes_and_declines() -> None:
    assert check(json.dumps(BASE).encode())
    assert check(json.dumps(BASE).encode(), position=True)
    taken = [
        {**BASE, "type": "update", "old": {"v": "y", "w": 2}},
        {**BASE, "type": "update"},
        {**BASE, "type": "delete"},
        {**BASE, "type": "bootstrap-insert"},
        WITHOUT_POSITION,  # the Kafka order, as with a position
        {**WITHOUT_POSITION, "commit": False, "xoffset": 3},
        {**BASE, "position": "binlog:4"},  # no sequence number: only the source fields read it
        {**BASE, "position": "bin-\u0663:5"},  # a non-ASCII digit, likewise
        {**BASE, "primary_key": None, "primary_key_columns": None},
        {**BASE, "data": {"id": 2**64 + 5, "v": "x"}, "primary_key": [2**64 + 5]},
        {**BASE, "data": {}, "primary_key_columns": []},
        {**BASE, "database": "", "gtid": "uuid:5"},
        {**BASE, "data": {"id": 1, "v": 1e-300}},  # an exponent
        {**BASE, "data": {"id": 1, "v": {"x": 1.5, "y": [1e-7]}}},  # decimals inside a nested value
    ]
    for doc in taken:
        assert check(json.dumps(doc).encode()), doc
    # order=position: a message without position is a reject (declined), one whose file has no index too.
    positioned = [doc for doc in taken if "position" in doc and doc["position"] not in ("binlog:4", "bin-\u0663:5")]
    assert len(positioned) == len(taken) - 4
    for doc in taken:
        assert check(json.dumps(doc).encode(), position=True) == (doc in positioned), doc
    declined = [
        {**BASE, "type": "table-create", "sql": "CREATE TABLE t (id int)"},
        {**BASE, "type": "heartbeat"},
        {**BASE, "type": "bootstrap-start"},
        {**BASE, "type": "INSERT"},
        {**BASE, "pkNames": None},  # Canal-looking
        {**BASE, "type": "insert", "old": {"v": "y"}},  # old on an insert: a reject
        {**BASE, "data": {"v": "x"}},  # the key column missing: a reject
        {**BASE, "ts": "1735689600"},
        {**BASE, "position": "mysql-bin.000001"},
    ]
    for doc in declined:
        assert LANE is not None
        assert LANE.parse(json.dumps(doc).encode(), TOPIC, 3, 0) is None, doc
    assert LANE is not None
    assert LANE.parse(b'{"type": "insert", "type": "insert"}', TOPIC, 3, 0) is None  # a repeated key
    assert LANE.parse(b'{"data": {"id": -0}}', TOPIC, 3, 0) is None
    assert LANE.parse(b"", TOPIC, 3, 0) is None
    assert LANE.planned() == 0


def test_options() -> None:
    """order is the lane's one option; another option, or an order the parser rejects, turns it off."""
    assert lane_for(FORMAT, context(bytes_encoding="latin1")) is None
    assert lane_for(FORMAT, context(order="kafka", bytes_encoding="latin1")) is None
    assert lane_for(FORMAT, context(order="binlog")) is None
    with pytest.raises(ConfigError, match="bad option"):  # the start stops
        python_records(json.dumps(BASE).encode(), context(order="binlog"), 0)
    for order in ("kafka", "position", ""):
        assert lane_for(FORMAT, context(order=order)) is not None
    assert lane_for(FORMAT, context()) is not None


def test_stream_switching_output_binlog_position_never_mixes_key_spaces() -> None:
    """The lane keys a stream that turns output_binlog_position off and on in the option's one space, as
    the parser does: Kafka order throughout, or binlog positions with the unpositioned messages declined."""
    assert LANE is not None and POSITION_LANE is not None
    stream = [BASE, WITHOUT_POSITION, {**BASE, "position": "mysql-bin.000002:4"}, WITHOUT_POSITION]
    for offset, doc in enumerate(stream):
        raw = json.dumps(doc).encode()
        assert check(raw, offset=offset)
        assert check(raw, offset=offset, position=True) == ("position" in doc)
        kafka = LANE.parse(raw, TOPIC, 3, offset)
        assert kafka is not None
        assert f"{3:020d}.{offset:020d}.000000".encode() in kafka[3][1]  # the Avro value holds the key


TEMPLATE = messages(FORMAT, Workload(seed=5, tables=2), 60, "UTC")
DOCS = [json.loads(raw) for _, raw in TEMPLATE]
COLUMNS = sorted(DOCS[0]["data"])

# Raw JSON value texts near the edges of each reading.
EDGE_VALUES = [
    "0", "-0", "1", "-1", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "1" * 40, "-" + "9" * 300,
    "0.0", "-0.0", "0.5", "-0.000", "1.50", "0.0000001", "0.0000000", "1." + "0" * 40, "1." + "0" * 41,
    "1" * 40 + ".5", "1" * 41 + ".5", "0." + "0" * 39 + "1", "1e5", "1E+5", "1.0E-300", "-2.5e-3", "0e0",
    "true", "false", "null", '""', '"x"', '"\\u0000\\u001f\\u007f\\u2028"', '"\\ud83c\\udf89"', '"\\ud800"',
    "[]", "{}", '["a","b"]', '{"k":2,"tags":["a","b"]}', '{"a":{"b":[1,-2,null,true]}}', '{"a":1.5}',
    "[1e2]", '{"a":1,"a":2}', '{"a":-0}', "[18446744073709551616,-9223372036854775809]", '{"\\"q":"\\\\"}',
]  # fmt: skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
raw_values = st.one_of(
    st.sampled_from(EDGE_VALUES),
    json_values.map(json.dumps),
    st.from_regex(r"-?(0|[1-9][0-9]{0,45})(\.[0-9]{1,45})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
)
PLACEHOLDER = "@@value@@"


def with_raw_value(doc: dict[str, Any], where: str, column: str, value: str) -> bytes:
    doc = json.loads(json.dumps(doc))
    if where == "old" and doc["type"] == "update":
        doc.setdefault("old", {})[column] = PLACEHOLDER
    elif where == "key":
        doc["primary_key_columns"] = [column]
        doc["data"][column] = PLACEHOLDER
    else:
        doc["data"][column] = PLACEHOLDER
    return json.dumps(doc).replace(json.dumps(PLACEHOLDER), value).encode()


@settings(max_examples=600)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    column=st.sampled_from([*COLUMNS, "new"]),
    value=raw_values,
    where=st.sampled_from(["data", "old", "key"]),
)
def test_mutated_values(index: int, column: str, value: str, where: str) -> None:
    check(with_raw_value(DOCS[index], where, column, value))


# Decimal(text) + decimal_text at the top level, str(Decimal) inside nested values: both notations,
# both sides of decimal_text's +-40 bounds and of str()'s "adjusted > -6" rule.
NUMBER_TEXTS = [
    f"{sign}{whole}{frac}{exp}"
    for sign in ("", "-")
    for whole in ("0", "1", "12", "1234567", "9" * 41)
    for frac in ("", ".0", ".5", ".000", ".0001", ".120", "." + "0" * 45 + "7")
    for exp in ("", "e0", "E5", "e-5", "E+7", "e-7", "e40", "e-41", "E-300", "e+300", "e39", "e-39", "e-6", "E+1")
]


def test_numbers() -> None:
    doc = json.loads(json.dumps(BASE))
    for text in NUMBER_TEXTS:
        taken = text != "-0"  # declined: Python reads it as the int 0
        assert check(with_raw_value(doc, "data", "v", text)) == taken, text
        assert check(with_raw_value(doc, "data", "v", f'{{"a":[{text}]}}')) == taken, text
        assert check(with_raw_value(doc, "key", "v", text)) == taken, text


json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=10)
positions = st.one_of(
    st.sampled_from(
        [
            "mysql-bin.000001:4", "mysql-bin.000001:0004", "a:b", ":5", "x:12345678901", "x:9999999999",
            "bin.\u0663:5", "bin:", "99999999999999999999:1", "999999999999999999999:1", "a:b:7", "x" * 513 + "1:2",
            "x" * 512 + ":2", "mysql-bin.000009", "",
        ]
    ),
    st.from_regex(r"[a-z.\-]{0,6}[0-9]{0,22}[a-z]{0,2}:[0-9]{0,11}", fullmatch=True),
)  # fmt: skip


@settings(max_examples=500)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from(
        [
            "type", "database", "table", "ts", "xid", "xoffset", "commit", "position", "gtid", "primary_key",
            "primary_key_columns", "data", "old", "isDdl", "server_id", "mysqlType",
        ]
    ),
    value=json_scalars | st.lists(json_scalars, max_size=3) | positions,
    drop=st.booleans(),
)  # fmt: skip
def test_mutated_envelope(index: int, field: str, value: Any, drop: bool) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    if drop:
        doc.pop(field, None)
    else:
        doc[field] = value
    try:
        raw = json.dumps(doc).encode()
    except ValueError:
        return
    check_both(raw)


ORDER_FIELDS = st.fixed_dictionaries(
    {
        "position": st.none() | positions,
        "xid": st.none() | st.integers(-5, 2**64) | st.sampled_from([0, 10**10 - 1, 10**10, 10**18, 10**20]),
        "xoffset": st.none() | st.integers(-2, 10**10 + 2) | st.sampled_from([9_999_999_998, 9_999_999_999]),
        "commit": st.none() | st.booleans(),
        "gtid": st.none() | st.sampled_from(["", "3e11fa47-71ca-11e1-9e33-c80aa9429562:23"]),
    }
)


@settings(max_examples=400)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    fields=ORDER_FIELDS,
    ts=st.integers(-(2**40), 2**45) | st.sampled_from([0, 9_999_999_999, 10_000_000_000, 99_999_999_999_999]),
)
def test_order_fields(index: int, fields: dict[str, Any], ts: int) -> None:
    """Both orders (option order kafka and position), with and without positions, xoffset and commit rows."""
    doc = json.loads(json.dumps(DOCS[index]))
    for name, value in fields.items():
        if value is None:
            doc.pop(name, None)
        else:
            doc[name] = value
    doc["ts"] = ts
    check_both(json.dumps(doc).encode())


@settings(max_examples=300)
@given(index=st.integers(min_value=0, max_value=len(TEMPLATE) - 1), data=st.data())
def test_flipped_bytes(index: int, data: st.DataObject) -> None:
    raw = bytearray(TEMPLATE[index][1])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    check_both(bytes(raw))
