"""The drs-json and drs-json-c lanes against the Python path, byte for byte.

Whatever a lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic in three
zones, on messages whose values and envelope fields hypothesis mutates, and on
flipped and truncated bytes, for both formats (a DELETE's row in ``old`` for
DRS JSON, in ``data`` for JSON-C; TIMESTAMPs as epoch seconds or wall clocks).
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

FORMATS = ["drs-json", "drs-json-c"]
TOPIC = "vendor.topic"
ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Europe/London"]


def context(zone_name: str = "UTC", **options: str) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=dict(options))


LANES: dict[tuple[str, str], Lane] = {}


def the_lane(format_id: str, zone_name: str = "UTC") -> Lane:
    if (format_id, zone_name) not in LANES:
        lane = lane_for(format_id, context(zone_name))
        assert lane is not None
        LANES[format_id, zone_name] = lane
    return LANES[format_id, zone_name]


def python_records(format_id: str, raw: bytes, zone_name: str, offset: int) -> Taken | None:
    """What the runtime publishes for ``raw`` through the Python parser, in the lane's shape (None: a reject)."""
    return python_records_of(format_id, raw, context(zone_name), TOPIC, offset)


def check(format_id: str, raw: bytes, zone_name: str = "UTC", offset: int = 41) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    fast = the_lane(format_id, zone_name).parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(format_id, raw, zone_name, offset), raw[:400]
    return True


def encode(doc: Any, ascii_only: bool = False) -> bytes:
    return json.dumps(doc, ensure_ascii=ascii_only).encode()


@pytest.mark.parametrize(("format_id", "minimum"), [("drs-json", 4), ("drs-json-c", 4)])
def test_golden_corpus(format_id: str, minimum: int) -> None:
    seen, taken = corpus_agreement(format_id, TOPIC)
    assert seen >= 16 and taken >= minimum  # every MySQL row message without zero dates or BIT values


@pytest.mark.parametrize("format_id", FORMATS)
@pytest.mark.parametrize(("zone_name", "seed"), [("UTC", 11), ("Asia/Shanghai", 2024), ("America/New_York", 3)])
def test_generated_traffic(format_id: str, zone_name: str, seed: int) -> None:
    items = messages(format_id, Workload(seed=seed, tables=4), 1500, zone_name)
    taken = sum(check(format_id, raw, zone_name, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message


BASE: dict[str, Any] = {
    "mysqlType": {
        "id": "bigint",
        "name": "varchar",
        "price": "decimal",
        "ratio": "double",
        "at": "timestamp",
        "dt": "datetime",
        "d": "date",
        "tm": "time",
        "b": "blob",
        "j": "json",
    },
    "id": 7,
    "es": 1735689600000,
    "ts": 1735689600123,
    "database": "shop",
    "table": "t",
    "type": "INSERT",
    "isDdl": False,
    "sql": "",
    "sqlType": {"id": -5},
    "data": [{"id": "1", "name": "x<&>", "price": "1.50", "ratio": "0.25", "at": "1724358620.399", "b": "[0, -1]"}],
    "old": None,
    "pkNames": ["id"],
}
ROW: dict[str, Any] = BASE["data"][0]


def deleted(format_id: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A DELETE of ``rows`` where ``format_id`` puts them."""
    where, other = ("old", "data") if format_id == "drs-json" else ("data", "old")
    return {**BASE, "type": "DELETE", where: rows, other: None}


@pytest.mark.parametrize("format_id", FORMATS)
def test_takes_and_declines(format_id: str) -> None:
    taken = [
        BASE,
        {**BASE, "type": "UPDATE", "old": [{**ROW, "name": "y", "ratio": None}]},
        {**BASE, "type": "update", "old": [{"name": None}]},  # a partial old
        {**BASE, "type": "UPDATE", "old": [None]},  # no prior image for that row
        {**BASE, "type": "UPDATE", "old": None},
        deleted(format_id, [ROW, {**ROW, "id": "2"}]),
        {**BASE, "type": "INIT", "old": []},
        {**BASE, "id": "27710"},  # a digit string, as in a corpus sample
        {**BASE, "id": 0, "es": 1735689600, "ts": None, "pkNames": None, "gtid": "g:1"},
        {**BASE, "dbType": "MySQL", "opType": "insert", "schema": "ignored", "columnType": {"x": "int"}},
        {**BASE, "dbType": " ", "extra": [1.5e300], "sqlType": {"id": float("inf")}},
        {**BASE, "database": "", "table": "t2 \t"},  # stripped as Python strips
        {**BASE, "data": [{"id": "18446744073709551615", "b": "[]", "at": "2024-01-02 03:04:05.5"}]},
        {**BASE, "data": [{"id": "1", "d": "2024-02-29", "tm": "-838:59:59", "j": '{"a": 1}', "b": "[255, -128]"}]},
    ]
    for doc in taken:
        for ascii_only in (False, True):  # Infinity: a number beyond the double range
            assert check(format_id, encode(doc, ascii_only).replace(b"Infinity", b"1e400")), doc
    declined = [
        {**BASE, "type": "DDL", "isDdl": True, "sql": "CREATE TABLE t (id int)"},
        {**BASE, "type": "INIT_DDL", "sql": "CREATE TABLE t (id int)"},
        {**BASE, "isDdl": True},
        {**BASE, "type": "TRUNCATE"},
        {**BASE, "type": "\u0131nsert"},  # Python's upper() makes it INSERT: left to Python
        {**BASE, "opType": "DELETE"},  # disagrees with type: a reject
        {**BASE, "dbType": "Oracle"},
        {**BASE, "dbType": "GaussDB"},
        {**BASE, "id": -1},
        {**BASE, "id": "007"},
        {**BASE, "id": None},
        {**BASE, "es": "1735689600000"},
        {**BASE, "es": 1.5},
        {**BASE, "table": " "},
        {**BASE, "table": "t\u3000"},  # a Unicode blank: left to Python
        {**BASE, "data": []},
        {**BASE, "data": {"id": "1"}},
        {**BASE, "old": [ROW]},  # an INSERT's old (unread, but Python looks into it)
        {**BASE, "type": "UPDATE", "old": [ROW, ROW]},  # more old rows than new ones
        {**BASE, "data": [{"id": "1", "extra": "x"}]},  # an undeclared column
        {**BASE, "data": [{"name": "x"}]},  # the key column missing: a reject
        {**BASE, "data": [{"id": 1}]},  # a number where DRS writes text
        {**BASE, "data": [{"id": "1", "b": "[1,2]"}]},
        {**BASE, "data": [{"id": "1", "b": "[-129]"}]},
        {**BASE, "data": [{"id": "1", "b": "[-0]"}]},
        {**BASE, "data": [{"id": "1", "at": "0000-00-00 00:00:00"}]},
        {**BASE, "mysqlType": {}},
        {**BASE, "mysqlType": None, "columnType": BASE["mysqlType"]},
        {**BASE, "sql": float("inf")},  # 1e5000: a number the exact decoder reads beyond 4300 digits: a reject
        deleted(format_id, [ROW]) | {"data": [ROW], "old": [ROW]},  # the other image is not empty
    ]
    lane = the_lane(format_id)
    for doc in declined:
        raw = encode(doc).replace(b"Infinity", b"1e5000")
        assert lane.parse(raw, TOPIC, 3, 0) is None, doc
        python_records(format_id, raw, "UTC", 0)  # Python reads (or rejects) it
    assert lane.parse(b'{"id": 1, "id": 2}', TOPIC, 3, 0) is None  # a repeated key
    assert lane.parse(b"", TOPIC, 3, 0) is None
    assert lane.planned() >= 1


def test_delete_rows_where_each_format_has_them() -> None:
    json_delete, json_c_delete = deleted("drs-json", [ROW]), deleted("drs-json-c", [ROW])
    assert check("drs-json", encode(json_delete)) and check("drs-json-c", encode(json_c_delete))
    # The other format's DELETE: a reject (no rows where this format reads them).
    assert the_lane("drs-json").parse(encode(json_c_delete), TOPIC, 3, 0) is None
    assert python_records("drs-json", encode(json_c_delete), "UTC", 0) is None
    assert the_lane("drs-json-c").parse(encode(json_delete), TOPIC, 3, 0) is None
    assert python_records("drs-json-c", encode(json_delete), "UTC", 0) is None


def test_options_have_no_lane() -> None:
    for format_id in FORMATS:
        assert lane_for(format_id, context()) is not None
        assert lane_for(format_id, context(bytes_encoding="base64")) is None


TEMPLATES = {format_id: messages(format_id, Workload(seed=5, tables=2), 40, "UTC") for format_id in FORMATS}
DOCS = {format_id: [json.loads(raw) for _, raw in items] for format_id, items in TEMPLATES.items()}
COLUMNS = sorted(DOCS["drs-json"][0]["mysqlType"])

# Value texts near the edges of each converter's strict subset, and of DRS's own renderings.
EDGE_TEXTS = [
    "0", "-0", "007", "1e3", " 1", "1 ", "+1", "9223372036854775808", "18446744073709551615", "1" * 39,
    "1." + "0" * 41, "-0.00", "2024-02-29", "2023-02-29", "0000-00-00", "2024-01-01 24:00:00",
    "2024-01-01T10:00:00", "2024-01-01 10:00:00.1234567", "838:59:59", "-838:59:59.000001", "12:60:00",
    "true", "nan", "Infinity", "", "\u00ff\u0100", "\u0663", ".5", "5.",
    "[]", "[0]", "[-128, 255]", "[-129]", "[256]", "[01]", "[-0]", "[1,2]", "[1,  2]", "[ 1]", "[+1]", "[1, ]",
    "0.5", "1724358620", "1724358620.1234567", "99999999999", "253402300799.999999", "253402300800",
    "1724358620.", "-1.5", "01724358620",
    "2021-03-14 02:30:00", "2021-11-07 01:30:00.5", "2024-03-31 01:30:00", "2024-10-27 01:30:00",
    "1988-04-10 02:30:00", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999",
]  # fmt: skip
value_texts = st.one_of(
    st.sampled_from(EDGE_TEXTS),
    st.text(max_size=12),
    st.from_regex(r"-?[0-9]{1,25}(\.[0-9]{1,12})?", fullmatch=True),
    st.from_regex(r"\[(-?[0-9]{1,3}(, -?[0-9]{1,3}){0,3})?\]", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,8})?)?", fullmatch=True),
)


@settings(max_examples=500, deadline=None)
@given(
    format_id=st.sampled_from(FORMATS),
    index=st.integers(min_value=0, max_value=39),
    column=st.sampled_from(COLUMNS),
    text=value_texts | st.none(),
    in_old=st.booleans(),
    zone_name=st.sampled_from(ZONES),
)
def test_mutated_values(
    *, format_id: str, index: int, column: str, text: str | None, in_old: bool, zone_name: str
) -> None:
    doc = json.loads(json.dumps(DOCS[format_id][index]))
    images = [doc[key] for key in ("data", "old") if doc[key]]
    image = images[-1] if in_old else images[0]
    image[0][column] = text
    check(format_id, encode(doc, ascii_only=bool(index % 2)), zone_name)


json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=10)
FIELD_VALUES = st.sampled_from(
    ["INSERT", "update", "Delete", "INIT", "DDL", "MySQL", "mysql ", "Oracle", "", " ", "t ", "7", "007", "-1"]
)

ENVELOPE_FIELDS = [
    "type", "opType", "dbType", "isDdl", "es", "ts", "id", "database", "table", "gtid", "pkNames", "old", "data",
    "mysqlType", "sql", "schema",
]  # fmt: skip


@settings(max_examples=500, deadline=None)
@given(
    format_id=st.sampled_from(FORMATS),
    index=st.integers(min_value=0, max_value=39),
    field=st.sampled_from(ENVELOPE_FIELDS),
    value=json_scalars | FIELD_VALUES | st.lists(json_scalars, max_size=3),
    drop=st.booleans(),
)
def test_mutated_envelope(format_id: str, index: int, field: str, value: Any, drop: bool) -> None:
    doc = json.loads(json.dumps(DOCS[format_id][index]))
    if drop:
        doc.pop(field, None)
    else:
        doc[field] = value
    try:
        raw = json.dumps(doc).encode()
    except ValueError:
        return
    check(format_id, raw.replace(b"Infinity", b"1e5000").replace(b"NaN", b"1E-5000"))


@settings(max_examples=400, deadline=None)
@given(format_id=st.sampled_from(FORMATS), index=st.integers(min_value=0, max_value=39), data=st.data())
def test_flipped_bytes(format_id: str, index: int, data: st.DataObject) -> None:
    raw = bytearray(TEMPLATES[format_id][index][1])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    cut = data.draw(st.just(len(raw)) | st.integers(min_value=1, max_value=len(raw)))
    check(format_id, bytes(raw[:cut]))
