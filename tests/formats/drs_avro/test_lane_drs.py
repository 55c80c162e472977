"""The drs-avro lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic in two
zones, on records whose values and envelope fields hypothesis mutates
(re-encoded with fastavro under the same schema), and on flipped bytes.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.cli.generate import messages
from binlake.shared.generate.render import parse_options
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, Taken, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "drs-avro"
TOPIC = "vendor.topic"
SCHEMA: dict[str, Any] = parse_options(FORMAT)["avro_schema"]
PARSED = fastavro.parse_schema(copy.deepcopy(SCHEMA))


def context(zone_name: str = "UTC", schema: Any = None, **options: Any) -> ParseContext:
    opts: dict[str, Any] = {"avro_schema": SCHEMA if schema is None else schema, **options}
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=opts)


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


def encode(record: dict[str, Any]) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, PARSED, record)
    return out.getvalue()


def test_golden_corpus() -> None:
    # Cases with a DTS-like schema, or options the lane does not handle, get no lane.
    seen, taken = corpus_agreement(FORMAT, TOPIC)
    assert seen >= 5 and taken >= 4  # every flat case that is not a reject


@pytest.mark.parametrize("zone_name", ["UTC", "Asia/Shanghai"])
@pytest.mark.parametrize("seed", [11, 2024])
def test_generated_traffic(seed: int, zone_name: str) -> None:
    items = messages(FORMAT, Workload(seed=seed, tables=4), 1500, zone_name)
    taken = sum(check(raw, zone_name, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message


BASE: dict[str, Any] = {
    "id": 7,
    "es": 1735689600000,
    "ts": 1735689600123,
    "database": "shop",
    "table": "t",
    "type": "INSERT",
    "isDdl": False,
    "sql": "",
    "mysqlType": {
        "id": "bigint",
        "name": "varchar",
        "price": "decimal(10,2)",
        "ratio": "double",
        "at": "timestamp",
        "dt": "datetime",
        "d": "date",
        "tm": "time",
        "b": "blob",
        "j": "json",
    },
    "sqlType": {"id": -5},
    "pkNames": ["id"],
    "data": [{"id": 1, "name": "x", "price": "1.50", "ratio": 0.25, "at": "1724358620.399", "b": b"\x00\xff"}],
    "old": None,
}


def test_takes_and_declines() -> None:
    assert check(encode(BASE))
    row = BASE["data"][0]
    taken = [
        {**BASE, "type": "UPDATE", "old": [{**row, "name": "y", "ratio": 0.5}]},
        {**BASE, "type": "update", "old": [{"name": None}]},
        {**BASE, "type": "DELETE", "data": None, "old": [row]},
        {**BASE, "type": "DELETE", "data": [row], "old": [{**row, "id": 2}]},
        {**BASE, "type": "INIT"},
        {**BASE, "pkNames": None, "es": 1735689600, "ts": 5},
        {**BASE, "es": -(2**63), "ts": 2**63 - 1, "id": 0},
        {**BASE, "es": -99_999_999_999, "ts": 100_000_000_000, "id": 2**63 - 1},
        {**BASE, "pkNames": ["name"]},
        {**BASE, "database": "", "table": "t2"},
        {**BASE, "database": "db \t", "table": "t \x1f"},  # stripped as Python strips
        {
            **BASE,
            "data": [row, {**row, "id": 2}, {"id": 3, "at": "2024-01-02 03:04:05.5", "dt": "2024-01-02 03:04:05"}],
        },
        {**BASE, "data": [{"id": "12", "d": "2024-02-29", "tm": "-838:59:59", "j": '{"a": 1}', "ratio": "1e3"}]},
        {**BASE, "data": [{"id": 1, "at": "0.5", "b": b""}]},
        {**BASE, "data": [{"id": 1, "b": "[]"}, {"id": "18446744073709551615", "b": "[106, 0, 255]"}]},
        {**BASE, "data": [{"id": 1, "b": "[-1, 2, -128]"}]},  # Java's signed bytes, as DRS JSON writes them
    ]
    for record in taken:
        assert check(encode(record)), record
    declined = [
        {**BASE, "type": "DDL", "isDdl": True, "sql": "CREATE TABLE t (id int)"},
        {**BASE, "type": "INIT_DDL", "sql": "CREATE TABLE t (id int)"},
        {**BASE, "type": "INSERT", "isDdl": True},
        {**BASE, "type": "TRUNCATE"},
        {**BASE, "id": -1},
        {**BASE, "table": ""},
        {**BASE, "table": "t\u3000"},  # a Unicode blank: left to Python
        {**BASE, "data": []},
        {**BASE, "data": [{"id": 1, "extra": "x"}]},  # an undeclared column
        {**BASE, "data": [{"name": "x"}]},  # the key column missing: a reject
        {**BASE, "data": [{"id": 1, "ratio": float("nan")}]},
        {**BASE, "data": [{"id": 1.0}]},
        {**BASE, "data": [{"id": 1, "b": "[1,2]"}]},
        {**BASE, "data": [{"id": 1, "b": "[256]"}]},
        {**BASE, "data": [{"id": 1, "b": "[-129]"}]},
        {**BASE, "data": [{"id": 1, "name": 5}]},
        {**BASE, "mysqlType": {}},
        {**BASE, "type": "UPDATE", "old": [{"id": "1"}]},  # a long against a string: unsure
    ]
    lane = the_lane()
    for record in declined:
        assert lane.parse(encode(record), TOPIC, 3, 0) is None, record
        python_records(encode(record), context(), 0)  # Python reads (or rejects) it
    assert lane.parse(encode(BASE) + b"\x00", TOPIC, 3, 0) is None  # bytes left over
    assert lane.parse(b"", TOPIC, 3, 0) is None
    assert lane.planned() >= 1


def test_lane_only_for_schemas_it_decodes() -> None:
    assert lane_for(FORMAT, context()) is not None
    assert lane_for(FORMAT, context(schema=[SCHEMA])) is not None  # a list: the last record
    fields = SCHEMA["fields"]
    others = [
        {**SCHEMA, "fields": [*fields, {"name": "gtid", "type": "string"}]},
        {**SCHEMA, "fields": [*fields, {"name": "operation", "type": "string"}]},
        {**SCHEMA, "fields": [f for f in fields if f["name"] != "id"]},
        {
            **SCHEMA,
            "fields": [
                {**f, "type": {"type": "long", "logicalType": "timestamp-millis"}} if f["name"] == "es" else f
                for f in fields
            ],
        },
        {**SCHEMA, "fields": [{**f, "type": "float"} if f["name"] == "es" else f for f in fields]},
        {"type": "string"},
        "not json",
    ]
    for schema in others:
        assert lane_for(FORMAT, context(schema=schema)) is None, schema
    assert lane_for(FORMAT, context(bytes_encoding="hex")) is None
    assert lane_for(FORMAT, ParseContext(topic=TOPIC, partition=3, offset=0)) is None  # no schema


_TEXTS = st.sampled_from(
    ["", "0", "-1", "007", "1.5", "-0.0", "1e3", "nan", "2024-02-30", "2024-02-29 23:59:59.999999", "0000-00-00",
     "1724358620", "1724358620.1234567", "99999999999.9", "253402300800", "12:00", "838:59:59.000001",
     "[1, 2]", "[]", "[01]", "[1,2]", "[255, 256]",
     " 1", "1 ", "true", "\u00e9", "2021-03-14 02:30:00", "2021-11-07 01:30:00"]
)  # fmt: skip
_VALUES = st.one_of(
    st.none(),
    _TEXTS,
    st.text(max_size=8),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.binary(max_size=6),
)
_COLUMNS = list(BASE["mysqlType"])


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.dictionaries(st.sampled_from(_COLUMNS), _VALUES, max_size=6), min_size=1, max_size=3),
    st.lists(st.dictionaries(st.sampled_from(_COLUMNS), _VALUES, max_size=4), max_size=3) | st.none(),
    st.sampled_from(["INSERT", "UPDATE", "DELETE", "INIT", "delete", "DDL"]),
    st.sampled_from(["UTC", "Asia/Shanghai", "America/New_York"]),
)
def test_mutated_values(
    data: list[dict[str, Any]], old: list[dict[str, Any]] | None, kind: str, zone_name: str
) -> None:
    record = {**BASE, "type": kind, "data": [{"id": i, **row} for i, row in enumerate(data)], "old": old}
    check(encode(record), zone_name)


@settings(max_examples=200, deadline=None)
@given(
    es=st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.none(),
    ident=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    database=st.sampled_from(["shop", "", " x", "x\t", "\u00e9t\u00e9", "a.b"]) | st.none(),
    table=st.sampled_from(["t", "", "t ", "T\u0130"]),
    pk=st.lists(st.sampled_from(["id", "name", "nope"]), max_size=2) | st.none(),
    is_ddl=st.booleans(),
)
def test_mutated_envelope(
    *, es: int | None, ident: int, database: str | None, table: str, pk: list[str] | None, is_ddl: bool
) -> None:
    schema = {
        **SCHEMA,
        "fields": [{**f, "type": ["null", "long"]} if f["name"] == "es" else f for f in SCHEMA["fields"]],
    }
    schema = {
        **schema,
        "fields": [{**f, "type": ["null", "string"]} if f["name"] == "database" else f for f in schema["fields"]],
    }
    ctx = context(schema=schema)
    lane = lane_for(FORMAT, ctx)
    assert lane is not None
    record = {**BASE, "mysqlType": {"id": "bigint", "name": "varchar"}, "data": [{"id": 1, "name": "n"}]}
    record.update(es=es, id=ident, database=database, table=table, pkNames=pk, isDdl=is_ddl)
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(copy.deepcopy(schema)), record)
    raw = out.getvalue()
    fast = lane.parse(raw, TOPIC, 3, 9)
    if fast is not None:
        assert fast == python_records(raw, ctx, 9)


GENERATED: list[dict[str, Any]] = [
    fastavro.schemaless_reader(io.BytesIO(raw), PARSED, None)  # type: ignore[misc]
    for _, raw in messages(FORMAT, Workload(seed=8, tables=2), 60, "UTC")
]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mixed_rows(data: st.DataObject) -> None:
    """Generated records whose row values are swapped with other rows' (same table or not)."""
    record = copy.deepcopy(data.draw(st.sampled_from(GENERATED)))
    donors = [row for other in GENERATED for row in (other["data"] or []) + (other["old"] or [])]
    for key in ("data", "old"):
        for row in record[key] or []:
            for name in data.draw(st.lists(st.sampled_from(sorted(row)), max_size=3)):
                donor = data.draw(st.sampled_from(donors))
                row[name] = donor.get(name, data.draw(_VALUES))
    check(encode(record), data.draw(st.sampled_from(["UTC", "Asia/Shanghai"])))


FLIP_SOURCE = [raw for _, raw in messages(FORMAT, Workload(seed=5, tables=2), 40, "UTC")]


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=len(FLIP_SOURCE) - 1), st.data())
def test_flipped_bytes(which: int, data: st.DataObject) -> None:
    raw = bytearray(FLIP_SOURCE[which])
    at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[at] = data.draw(st.integers(min_value=0, max_value=255))
    cut = data.draw(st.just(len(raw)) | st.integers(min_value=1, max_value=len(raw)))
    check(bytes(raw[:cut]))
