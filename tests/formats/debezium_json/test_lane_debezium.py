"""The Debezium JSON lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic, and on
messages whose column values (raw JSON texts at the edges of each Connect
type), field schemas, source and envelope fields and bytes hypothesis mutates;
without key columns and with option ``primary_key`` (the record key then holds
the key values).
"""

from __future__ import annotations

import base64
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
from tests.corpus_cases import cases
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "debezium-json"
TOPIC = "vendor.topic"


def context(zone_name: str = "UTC", **options: Any) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=dict(options))


def the_lane(ctx: ParseContext | None = None) -> Lane:
    lane = lane_for(FORMAT, ctx or context())
    assert lane is not None
    return lane


LANE = the_lane() if available() else None
_KEYED: dict[str, tuple[ParseContext, Lane]] = {}


def keyed(primary_key: str) -> tuple[ParseContext, Lane]:
    """The context with option ``primary_key`` and its lane (one per option, so plans are reused)."""
    if primary_key not in _KEYED:
        ctx = context(primary_key=primary_key)
        _KEYED[primary_key] = ctx, the_lane(ctx)
    return _KEYED[primary_key]


def python_records(raw: bytes, ctx: ParseContext, offset: int) -> Taken | None:
    """What the runtime publishes for ``raw`` through the Python parser, in the lane's shape (None: a reject)."""
    return python_records_of(FORMAT, raw, ctx, TOPIC, offset)


def check(raw: bytes, ctx: ParseContext | None = None, offset: int = 41, lane: Lane | None = None) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    lane = lane or LANE
    assert lane is not None
    fast = lane.parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(raw, ctx or context(), offset), raw[:600]
    return True


def test_golden_corpus() -> None:
    _, taken = corpus_agreement(FORMAT, TOPIC)
    # The corpus is mostly OMS, schema-less and control messages: the standard MySQL
    # connector's messages with schemas (every Connect type it sends) are the lane's,
    # one of them with option primary_key.
    assert taken >= 2


def test_golden_corpus_keyed() -> None:
    """The corpus messages the lane takes, keyed by each of their columns (every Connect type as a key)."""
    assert LANE is not None
    taken: set[str] = set()
    declined: set[str] = set()
    for case in cases():
        raw = case.raw()
        if case.format_id != FORMAT or case.context().options or LANE.parse(raw, TOPIC, 3, 41) is None:
            continue
        payload = json.loads(raw)["payload"]
        image = payload["after"] if payload["after"] is not None else payload["before"]
        for column in [*image, "absent"]:
            for primary_key in (column, f"{column},id", f"id, {column}"):
                ctx, lane = keyed(primary_key)
                fast = lane.parse(raw, TOPIC, 3, 41)
                if fast is None:
                    declined.add(column)
                    continue
                assert fast == python_records(raw, ctx, 41), (case.id, primary_key)
                taken.add(column)
        # A key column the image lacks: Python rejects, the lane declines.
        assert python_records(raw, keyed("absent")[0], 41) is None
    # Integers (Year, Bits too), strings, decimals and bytes are keys the lane renders; booleans,
    # floats, dates and times are not (declined, the Python path keys them).
    assert taken == {"id", "name", "price", "discount", "big_unsigned", "ratio", "model_year", "attrs", "size",
                     "tags", "flags", "blob", "counter", "small", "note"}  # fmt: skip
    assert declined == {"made_on", "duration", "created", "created_us", "updated_at", "active", "weight", "volume",
                        "absent"}  # fmt: skip


@pytest.mark.parametrize(
    ("seed", "zone_name"), [(1, "UTC"), (11, "Asia/Shanghai"), (2024, "UTC"), (7, "Asia/Shanghai")]
)
def test_generated_traffic(seed: int, zone_name: str) -> None:
    ctx = context(zone_name)
    lane = the_lane(ctx)
    items = messages(FORMAT, Workload(seed=seed, tables=4), 2000, zone_name)
    taken = sum(check(raw, ctx, offset, lane) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated message is an ordinary change event
    assert lane.planned() <= 8


def test_options() -> None:
    """primary_key and order=position (the default) are the lane's options; another option, order=kafka, or a
    value the parser rejects, turns it off."""
    assert lane_for(FORMAT, context()) is not None
    assert lane_for(FORMAT, context(order="position")) is not None
    assert lane_for(FORMAT, context(order="")) is not None
    assert lane_for(FORMAT, context(order="position", primary_key="id")) is not None
    assert lane_for(FORMAT, context(order="kafka")) is None
    assert lane_for(FORMAT, context(order="lsn")) is None
    assert lane_for(FORMAT, context(primary_key="id")) is not None
    assert lane_for(FORMAT, context(primary_key="id, name")) is not None
    assert lane_for(FORMAT, context(primary_key=["id", "name"])) is not None
    assert lane_for(FORMAT, context(primary_key="")) is not None  # no key columns, as without the option
    assert lane_for(FORMAT, context(bytes_encoding="hex")) is None
    assert lane_for(FORMAT, context(bytes_encoding="base64")) is None
    assert lane_for(FORMAT, context(primary_key="id", bytes_encoding="base64")) is None
    for bad in ("id,,name", " "):
        ctx = context(primary_key=bad)
        assert lane_for(FORMAT, ctx) is None
        assert python_records(TEMPLATE[0][1], ctx, 0) is None  # every message a reject
    for wrong_type in (5, ["id", 5]):
        with pytest.raises(ConfigError, match="bad option"):
            python_records(TEMPLATE[0][1], context(primary_key=wrong_type), 0)


@pytest.mark.parametrize(
    "primary_key",
    # id and price are Connect Decimals, qty and active integers, name, note (sometimes null) and
    # doc strings, payload bytes: all renderable in the key.
    ["id", "id,name", " name , id ", "qty", "note", "payload", "price,active", "doc,id"],
)
def test_generated_traffic_keyed(primary_key: str) -> None:
    ctx, lane = keyed(primary_key)
    items = messages(FORMAT, Workload(seed=3, tables=4), 500, "UTC")
    taken = sum(check(raw, ctx, offset, lane) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)


@pytest.mark.parametrize(
    ("primary_key", "column"),
    [
        ("ratio", "ratio"),  # a float: orjson's rendering, not the lane's
        ("id,birthday", "birthday"),  # a date
        ("created_at", "created_at"),  # a local date-time
        ("updated_at", "updated_at"),  # an instant
        ("alarm,name", "alarm"),  # a time
    ],
)
def test_generated_traffic_keys_declined(primary_key: str, column: str) -> None:
    """A key column the lane cannot render: declined unless null (then rendered as null)."""
    ctx, lane = keyed(primary_key)
    declined = 0
    for offset, (_, raw) in enumerate(messages(FORMAT, Workload(seed=3, tables=4), 300, "UTC")):
        payload = json.loads(raw)["payload"]
        identity = payload["after"] if payload["after"] is not None else payload["before"]
        assert check(raw, ctx, offset, lane) == (identity[column] is None)
        declined += identity[column] is not None
    assert declined > 0


@pytest.mark.parametrize("primary_key", ["missing", "id,missing"])
def test_generated_traffic_key_column_missing(primary_key: str) -> None:
    """A key column the identifying image lacks: Python rejects, the lane declines."""
    ctx, lane = keyed(primary_key)
    for offset, (_, raw) in enumerate(messages(FORMAT, Workload(seed=3, tables=4), 100, "UTC")):
        assert lane.parse(raw, TOPIC, 3, offset) is None
        assert python_records(raw, ctx, offset) is None


TEMPLATE = messages(FORMAT, Workload(seed=5, tables=2), 80, "UTC")
DOCS = [json.loads(raw) for _, raw in TEMPLATE]
COLUMNS = [f["field"] for f in DOCS[0]["schema"]["fields"][1]["fields"]]


def dumps(doc: Any, compact: bool = True) -> bytes:
    return json.dumps(doc, separators=(",", ":") if compact else None, ensure_ascii=False).encode()


def test_takes_and_declines() -> None:
    base = DOCS[0]
    assert check(dumps(base))
    assert check(dumps(base, compact=False))

    def variant(**payload: Any) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(json.dumps(base))
        doc["payload"].update(payload)
        return doc

    def source(**fields: Any) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(json.dumps(base))
        doc["payload"]["source"].update(fields)
        return doc

    after = base["payload"]["after"]
    taken = [
        variant(op="r"),
        variant(op="u", before=after),
        variant(op="u", before=None),
        variant(op="d", before=after, after=None),
        variant(op="c", before={"x": 1}),  # an INSERT's before is ignored
        variant(transaction={"id": "tx-1", "total_order": 1, "data_collection_order": 1}),
        variant(ts_ms=None),
        source(gtid="3e11fa47-71ca-11e1-9e33-c80aa9429562:23", sequence='["1","2"]', snapshot="true"),
        source(ts_ms=0),
        source(ts_ms=1735689600),  # seconds
        source(connector="postgresql", schema="public", lsn=12345),  # the LSN orders, not the binlog fields
        source(connector="postgresql", file=None, pos=None, lsn=0),
        source(connector="MariaDB", lsn=12345),  # binlog position
        source(connector="sqlserver"),  # the Kafka order, whatever the fields say
        source(connector="oracle", lsn=12345),
        source(connector=""),
        source(connector=None, lsn=12345),
        source(connector=None, file=None, pos=None),
        source(db=""),
        variant(after={}),
        variant(after=dict.fromkeys(COLUMNS)),
    ]
    for doc in taken:
        assert check(dumps(doc)), doc
    declined: list[Any] = [
        variant(op="t"),
        variant(op="m"),
        variant(op="HEARTBEAT"),
        variant(op="x"),
        variant(op="u", after=None),
        variant(op="d", before=None),
        source(table=""),  # --source-table
        source(name="OMS"),
        source(connector="OB_MYSQL"),
        source(connector="MongoDB"),
        source(pos="204"),
        source(row=1_000_000),
        source(file="mysql-bin.\u0663"),
        source(file="mysql-bin"),
        source(file=None, lsn=-1),
        # A change without its connector's position: a reject.
        source(file="", pos=5),
        source(file=None, lsn=12345),
        source(pos=None),
        source(connector="mariadb", file=None),
        source(connector="postgresql", schema="public"),
        source(connector="postgresql", lsn=-1),
        source(pos=10**14),  # pos * 10**6 + row beyond the order key's 20 digits
        source(ts_ms=1.5),
        variant(after={**after, "undeclared": 1}),
        variant(transaction="tx"),
        {"payload": base["payload"]},  # no schema: inferred columns
        {"schema": None, "payload": base["payload"]},
        base["payload"],  # the bare payload
        {**base, "payload": None},  # a tombstone
    ]
    for doc in declined:
        assert LANE is not None
        assert LANE.parse(dumps(doc), TOPIC, 3, 0) is None, doc
    assert LANE is not None
    assert LANE.parse(b"", TOPIC, 3, 0) is None
    assert LANE.parse(b"null", TOPIC, 3, 0) is None
    assert LANE.parse(b'{"schema":{},"payload":{"op":"c","op":"c"}}', TOPIC, 3, 0) is None  # a repeated key


@pytest.mark.parametrize("connector", ["mysql", "postgresql", "sqlserver", None])
def test_a_connector_sending_its_position_only_sometimes_never_mixes_key_spaces(connector: str | None) -> None:
    """Messages of one connector with and without ``file`` / ``lsn``: the lane keys each in the
    connector's one space as the parser does (and declines what the parser rejects), never in the
    Kafka order for the messages that lack the position."""
    assert LANE is not None
    fields: list[dict[str, Any]] = [
        {"file": "mysql-bin.000003", "pos": 4, "row": 0},
        {"file": None, "pos": None, "lsn": 24023128},
        {"file": "mysql-bin.000003", "pos": 90, "lsn": 24023200},
        {"file": None, "pos": None},
        {"file": None, "pos": None, "lsn": 24023300},
    ]
    taken = []
    for offset, update in enumerate(fields):
        doc: dict[str, Any] = json.loads(json.dumps(DOCS[0]))
        doc["payload"]["source"].update(update, connector=connector)
        raw = dumps(doc)
        expected = python_records(raw, context(), offset)
        took = check(raw, offset=offset)
        assert took == (expected is not None)  # the lane takes every change the parser accepts here
        taken.append(took)
    assert taken == {
        "mysql": [True, False, True, False, False],
        "postgresql": [False, True, True, False, True],
    }.get(connector or "", [True] * 5)


def test_key_columns_of_each_image() -> None:
    """require_key_columns reads the deleted row's image for a DELETE, the new row's otherwise."""
    ctx, lane = keyed("id,name")
    base = DOCS[0]
    after = base["payload"]["after"]
    without_id = {k: v for k, v in after.items() if k != "id"}

    def variant(**payload: Any) -> bytes:
        doc: dict[str, Any] = json.loads(json.dumps(base))
        doc["payload"].update(payload)
        return dumps(doc)

    taken = [
        variant(),
        variant(op="r"),
        variant(op="u", before=without_id),  # the old row may lack it
        variant(op="u", before=None),
        variant(op="d", before=after, after=None),
        variant(op="c", before={}),  # an INSERT's before is ignored
        variant(after={**after, "name": None}),  # a null key value
    ]
    for raw in taken:
        assert check(raw, ctx, lane=lane), raw
    rejected = [
        variant(after=without_id),
        variant(op="r", after={}),
        variant(op="u", before=after, after=without_id),
        variant(op="d", before=without_id, after=None),
        variant(op="d", before=without_id, after=after),  # a DELETE's after is not its identity
    ]
    for raw in rejected:
        assert lane.parse(raw, TOPIC, 3, 0) is None, raw
        assert python_records(raw, ctx, 0) is None, raw


def b64(n: int, size: int) -> str:
    return base64.b64encode(n.to_bytes(size, "big", signed=True)).decode()


# Raw JSON value texts near the edges of each Connect reading.
EDGE_VALUES = [
    "0", "-0", "1", "-1", "127", "128", "-128", "-129", "32767", "32768", "2147483647", "2147483648", "-2147483649",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "18446744073709551616", "1" * 40,
    "2932896", "2932897", "-719162", "-719163", "253402300799999999", "253402300800000000", "-62135596800000000",
    "-62135596800000001", "9999", "10000", "-1999", "-1001", "999", "1000",
    "0.0", "-0.0", "0.5", "1.50", "1e5", "1E+5", "1.0E-300", "-2.5e-3", "0e0", "1e400", "4.9e-324",
    "2.2250738585072014e-308", "1.7976931348623157e308", "0.1", "123456789012345678901234567890",
    "true", "false", "null", '""', '"x"', '"\\u0000\\u001f\\u007f\\u2028"', '"\\ud83c\\udf89"', '"\\ud800"', '"1"',
    '"AQ=="', '"AQ"', '"AR=="', '"AQI="', '"AQJ="', '"/w=="', '"gA=="', '"AAAA"', '"A Q=="', '"QUJD\\n"', '"===="',
    '"@@@@"', f'"{b64(-1, 16)}"', f'"{b64(2**127 - 1, 16)}"', f'"{b64(-(2**127), 16)}"', f'"{b64(1, 17)}"',
    f'"{b64(-5, 1)}"', f'"{b64(10**30, 13)}"',
    '"2024-09-07T14:42:42.875Z"', '"2024-09-07T14:42:42Z"', '"2024-09-07T14:42:42.1Z"', '"2024-09-07T14:42:42.123456Z"',
    '"2024-09-07T14:42:42.1234567Z"', '"2024-09-07 14:42:42Z"', '"2024-02-29T00:00:00Z"', '"2023-02-29T00:00:00Z"',
    '"0001-01-01T00:00:00Z"', '"9999-12-31T23:59:59.999999Z"', '"0000-01-01T00:00:00Z"', '"2024-09-07T24:00:00Z"',
    '"2024-09-07T14:42:60Z"', '"2024-09-07T14:42:42+08:00"', '"2024-09-07T14:42:42"', '"1606233662"',
    "[]", "{}", '["a","b"]', '{"k":2}', '{"scale":2,"value":"AQ=="}', '{"wkb":"AQ==","srid":0}',
]  # fmt: skip
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)
raw_values = st.one_of(
    st.sampled_from(EDGE_VALUES),
    json_values.map(json.dumps),
    st.from_regex(r"-?(0|[1-9][0-9]{0,25})(\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
    st.binary(min_size=1, max_size=20).map(lambda b: json.dumps(base64.b64encode(b).decode())),
    st.datetimes().map(lambda d: json.dumps(d.isoformat(timespec="microseconds") + "Z")),
)
PLACEHOLDER = "@@value@@"


def with_raw_value(doc: dict[str, Any], where: str, column: str, value: str) -> bytes:
    doc = json.loads(json.dumps(doc))
    payload = doc["payload"]
    if where == "before":
        payload["op"] = "u" if payload["op"] != "d" else "d"
        if payload["before"] is None:
            payload["before"] = dict(payload["after"])
        payload["before"][column] = PLACEHOLDER
    else:
        if payload["after"] is None:
            payload["after"] = {}
        payload["after"][column] = PLACEHOLDER
    return dumps(doc).replace(dumps(PLACEHOLDER), value.encode())


@settings(max_examples=800)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    column=st.sampled_from([*COLUMNS, "new"]),
    value=raw_values,
    where=st.sampled_from(["after", "before"]),
    key=st.sampled_from(["", "{}", "id,{}"]),
)
def test_mutated_values(index: int, column: str, value: str, where: str, key: str) -> None:
    """``key``: option primary_key, ``{}`` the mutated column (none: no key columns)."""
    ctx, lane = keyed(key.format(column))
    check(with_raw_value(DOCS[index], where, column, value), ctx, lane=lane)


# Field schemas of every Connect type the lane reads and some it does not, to pair with the values.
_LITERALS: list[dict[str, Any]] = [
    {"type": literal} for literal in ("int8", "int16", "int32", "int64", "float", "float32", "double", "boolean")
]
FIELD_SCHEMAS: list[dict[str, Any]] = (
    _LITERALS
    + [
        {"type": "string"},
        {"type": "bytes"},
        {"type": "STRING"},
        {"type": "struct"},
        {"type": "int32", "name": "io.debezium.time.Date"},
        {"type": "int32", "name": "org.apache.kafka.connect.data.Date"},
        {"type": "int32", "name": "io.debezium.time.Time"},
        {"type": "int64", "name": "io.debezium.time.MicroTime"},
        {"type": "int64", "name": "io.debezium.time.NanoTime"},
        {"type": "int64", "name": "io.debezium.time.Timestamp"},
        {"type": "int64", "name": "org.apache.kafka.connect.data.Timestamp"},
        {"type": "int64", "name": "io.debezium.time.MicroTimestamp"},
        {"type": "int64", "name": "io.debezium.time.NanoTimestamp"},
        {"type": "string", "name": "io.debezium.time.ZonedTimestamp"},
        {"type": "int32", "name": "io.debezium.time.Year"},
        {"type": "string", "name": "io.debezium.data.Json"},
        {"type": "string", "name": "io.debezium.data.Enum"},
        {"type": "string", "name": "io.debezium.data.EnumSet"},
        {"type": "bytes", "name": "io.debezium.data.Json"},
        {"type": "bytes", "name": "io.debezium.data.Bits", "parameters": {"length": "8"}},
        {"type": "struct", "name": "io.debezium.data.VariableScaleDecimal"},
        {"type": "struct", "name": "io.debezium.data.geometry.Point"},
        {"type": "string", "name": "com.example.Custom"},
        {"type": "int16", "name": "com.example.Custom"},
    ]
    + [
        {"type": "bytes", "name": "org.apache.kafka.connect.data.Decimal", "parameters": {"scale": scale}}
        for scale in ("0", "2", "10", "40", "41", "-1", 3)
    ]
)


@settings(max_examples=800)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    column=st.sampled_from(COLUMNS),
    schema=st.sampled_from(FIELD_SCHEMAS),
    value=raw_values,
    where=st.sampled_from(["after", "before"]),
    key=st.sampled_from(["", "{}", "{},name"]),
)
def test_field_schemas(index: int, column: str, *, schema: dict[str, Any], value: str, where: str, key: str) -> None:
    """``key`` as in ``test_mutated_values``: every Connect type as a key column."""
    doc = json.loads(json.dumps(DOCS[index]))
    for image in doc["schema"]["fields"][:2]:
        image["fields"] = [{**schema, "field": column} if f["field"] == column else f for f in image["fields"]]
    ctx, lane = keyed(key.format(column))
    check(with_raw_value(doc, where, column, value), ctx, lane=lane)


json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=10)
files = st.sampled_from(
    ["mysql-bin.000001", "mysql-bin.000001x", "", "a", "bin.\u0663", "x" * 70 + "1", "9" * 21, "9" * 20, "b-7.log"]
) | st.from_regex(r"[a-z.\-]{0,6}[0-9]{0,22}[a-z]{0,2}", fullmatch=True)
SOURCE_FIELDS = ["connector", "name", "db", "schema", "table", "file", "pos", "row", "gtid", "scn", "sequence", "lsn",
                 "ts_ms", "snapshot", "server_id"]  # fmt: skip


@settings(max_examples=600)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from([*SOURCE_FIELDS, "payload.op", "payload.ts_ms", "payload.transaction", "payload.source"]),
    value=json_scalars | st.lists(json_scalars, max_size=3) | files | st.integers(-5, 2**64),
    drop=st.booleans(),
)
def test_mutated_envelope(index: int, field: str, value: Any, drop: bool) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    target, name = (doc["payload"], field[8:]) if field.startswith("payload.") else (doc["payload"]["source"], field)
    if drop:
        target.pop(name, None)
    else:
        target[name] = value
    try:
        raw = dumps(doc)
    except ValueError:
        return
    check(raw)


@settings(max_examples=300)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    transaction=st.none() | st.fixed_dictionaries({"id": json_scalars}),
    pos=st.integers(-2, 2**45) | st.sampled_from([10**14 - 1, 10**14, 2**63 - 1]),
    row=st.integers(-2, 1_000_001),
    ts=st.integers(-(2**40), 2**45) | st.sampled_from([0, 99_999_999_999, 100_000_000_000]),
)
def test_order_fields(index: int, transaction: Any, pos: int, row: int, ts: int) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    source = doc["payload"]["source"]
    source.update(pos=pos, row=row, ts_ms=ts)
    doc["payload"]["transaction"] = transaction
    check(dumps(doc))


@settings(max_examples=300)
@given(index=st.integers(min_value=0, max_value=len(TEMPLATE) - 1), data=st.data())
def test_flipped_bytes(index: int, data: st.DataObject) -> None:
    raw = bytearray(TEMPLATE[index][1])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    check(bytes(raw))
