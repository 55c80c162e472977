"""The oms-default and oms-extend-column-type lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic in three
zones, on messages whose values, type words and envelope fields hypothesis
mutates (numbers written with their exact digits), and on flipped bytes.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.cli.generate import messages
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, Taken, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

DEFAULT = "oms-default"
EXTEND = "oms-extend-column-type"
FORMATS = [DEFAULT, EXTEND]
TOPIC = "vendor.topic"
ZONES = ["UTC", "Asia/Shanghai", "America/New_York"]


def context(zone_name: str = "UTC", **options: Any) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=options)


LANES: dict[tuple[str, str], Lane] = {}


def the_lane(format_id: str, zone_name: str = "UTC") -> Lane:
    if (format_id, zone_name) not in LANES:
        lane = lane_for(format_id, context(zone_name))
        assert lane is not None
        LANES[(format_id, zone_name)] = lane
    return LANES[(format_id, zone_name)]


def python_records(format_id: str, raw: bytes, ctx: ParseContext, offset: int) -> Taken | None:
    return python_records_of(format_id, raw, ctx, TOPIC, offset)


def check(format_id: str, raw: bytes, zone_name: str = "UTC", offset: int = 41) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    fast = the_lane(format_id, zone_name).parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(format_id, raw, context(zone_name), offset), raw[:600]
    return True


def dumps(doc: Any) -> bytes:
    return orjson.dumps(doc)


def num(text: str) -> orjson.Fragment:
    """A JSON number with exactly these digits (OMS writes decimals and doubles' expansions)."""
    return orjson.Fragment(text)


@pytest.mark.parametrize("format_id", FORMATS)
def test_golden_corpus(format_id: str) -> None:
    seen, taken = corpus_agreement(format_id, TOPIC)
    # Every row case that is not a reject (the others: DDL, heartbeats, rejects, Oracle-mode
    # types, light types mixing declared and inferred columns, zone-suffixed or invalid times).
    assert seen >= 20 and taken >= {DEFAULT: 7, EXTEND: 3}[format_id]


@pytest.mark.parametrize("zone_name", ZONES)
@pytest.mark.parametrize("seed", [11, 2024])
@pytest.mark.parametrize("format_id", FORMATS)
def test_generated_traffic(format_id: str, seed: int, zone_name: str) -> None:
    items = messages(format_id, Workload(seed=seed, tables=4), 1500, zone_name)
    taken = sum(check(format_id, raw, zone_name, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message


@pytest.mark.parametrize("format_id", FORMATS)
def test_generated_tenant_traffic(format_id: str) -> None:
    """Traffic of an OceanBase tenant: dbType OB_MYSQL, db ``tenant.database`` (split again)."""
    render_fn = render.get(format_id)
    ctx = render.RenderContext(zone=zone("Asia/Shanghai"), options={"tenant": "t1"})
    items = [render_fn(change, ctx) for change in Workload(seed=7, tables=3).run(300)]
    taken = sum(check(format_id, raw, "Asia/Shanghai", offset) for offset, raw in enumerate(items))
    assert taken == len(items)


META: dict[str, Any] = {
    "checkpoint": "1735689600",
    "record_primary_key": "id",
    "source_identity": None,
    "record_primary_value": "1",
    "dbType": "MYSQL",
    "storeDataSequence": "173568960000000001",
    "table_name": "t",
    "db": "shop",
    "timestamp": "1735689600",
    "uniqueId": "1001",
}
ROW: dict[str, Any] = {
    "id": 1,
    "big": num("18446744073709551616"),
    "price": num("-12.3400"),
    "ratio": num("3.141592653589793115997963468544185161590576171875"),
    "name": "x",
    "at": "1719178347.507",
    "d": "2018-05-22",
    "tm": "-733:00:08.5",
    "dt": "2020-04-08 00:47:34.267459",
    "b": "AP8=",
    "j": '{"k": 1}',
    "flag": 1,
    "none": None,
}
WORDS: dict[str, str | None] = {
    "id": "BIGINT",
    "big": "BIGINT",
    "price": "DECIMAL",
    "ratio": "DOUBLE",
    "name": "VARCHAR",
    "at": "TIMESTAMP",
    "d": "DATE",
    "tm": "TIME",
    "dt": "DATETIME",
    "b": "BLOB",
    "j": "JSON",
    "flag": "TINYINT",
    "none": "VARCHAR",
}


def message(
    kind: str = "INSERT",
    prev: dict[str, Any] | None = None,
    post: dict[str, Any] | None = None,
    words: Mapping[str, str | None] | None = None,
    **meta: Any,
) -> dict[str, Any]:
    """A Default message; with ``words``, each image carries them as its ``__light_type``."""
    images = {"prevStruct": prev, "postStruct": post}
    if words is not None:
        light = {name: {"schemaType": word} for name, word in words.items()}
        images = {key: None if image is None else {**image, "__light_type": light} for key, image in images.items()}
    return {"allMetaData": {**META, **meta}, "recordType": kind, **images}


def test_takes_and_declines() -> None:
    row = ROW
    changed = {**row, "name": "y", "ratio": num("0.5")}
    taken = [
        message(post=row),
        message("UPDATE", prev=row, post=changed),
        message("DELETE", prev=row),
        message("insert", post=row, dbType="OB_MYSQL", db="tenant.shop"),
        message(post=row, dbType="ob_oracle", db="tenant.SCHEMA"),  # Oracle mode: named by schema
        message(post=row, dbType="DB2", db="S"),
        message(post=row, dbType="OB_MYSQL", db=".shop"),
        message(post=row, dbType=None, db=None, checkpoint=None, uniqueId=None),
        message(post=row, storeDataSequence=None),
        message(post=row, storeDataSequence=None, timestamp=None),  # full load
        message(post=row, storeDataSequence="x", timestamp="-5"),
        message(post=row, storeDataSequence=num("173568960000000001")),  # a number: its text
        message(post=row, storeDataSequence="00001"),
        message(post=row, storeDataSequence="123456789012345678901"),  # verbatim: not the order key
        message(post=row, timestamp=num("1735689600123")),
        message(post=row, record_primary_key="id\u0001name"),
        message(post=row, record_primary_key=None),
        message(post=row, record_primary_key="big"),  # a BigInt key: its digits as a string
        message(post=row, record_primary_key="price"),  # a Decimal key: its text
        message(post=row, record_primary_key="d\u0001none"),  # untyped: a string, and null
        message(post={"id": True, "n": {"a": [1, num("2.50"), None]}}, record_primary_key="id"),
        message(post={"id": 1, "e": "", "u": '名字 😀 "q" \\'}),
    ]
    for doc in taken:
        assert check(DEFAULT, dumps(doc)), doc
        assert check(EXTEND, dumps(doc)), doc  # without types, Extend reads like Default
    declined = [
        message("HEARTBEAT", post=row),
        message("DDL", post={"ddl": "CREATE TABLE t (id int)"}),
        message("TRUNCATE", post=row),
        message(post=row, table_name=""),
        message(post={}),
        message(post=row, prev=row),  # an INSERT's prior image: left to Python
        message("DELETE", prev=row, post=row),
        message("UPDATE", post=row),
        message(post=row, record_primary_key="nope"),  # a missing key column: a reject
        message(post=row, record_primary_key="id\u0001"),  # an empty key name: a reject
        message(post={"id": num("-0")}),  # Python's int 0 loses the sign
        message(post=row, timestamp="1.5"),
        message(post=row, dbType=" MYSQL"),
        message(post=row, db=num("1.5")),
    ]
    for doc in declined:
        for format_id in FORMATS:
            assert the_lane(format_id).parse(dumps(doc), TOPIC, 3, 0) is None, doc
            python_records(format_id, dumps(doc), context(), 0)  # Python reads (or rejects) it
    typed = message(post=row, words=WORDS)
    assert the_lane(DEFAULT).parse(dumps(typed), TOPIC, 3, 0) is None  # light types in Default: a reject
    assert the_lane(EXTEND).parse(b"", TOPIC, 3, 0) is None
    assert the_lane(EXTEND).parse(dumps(typed)[:-1], TOPIC, 3, 0) is None


def test_typed_takes_and_declines() -> None:
    row = ROW
    changed = {**row, "name": "y", "ratio": num("0.5"), "at": "2024-01-02 03:04:05.5"}
    taken = [
        message(post=row, words=WORDS),
        message("UPDATE", prev=row, post=changed, words=WORDS),
        message("DELETE", prev=row, words=WORDS),
        message(post={"id": "12", "price": "1.50", "ratio": "1e3", "flag": "0"}, words=WORDS),
        message(post={"id": 2, "price": 7, "ratio": 7, "at": 1606233662, "none": "a"}, words=WORDS),
        message(post={"id": 3, "price": num("1.2345678901234567890123456789E+5"), "ratio": num("-0.0")}, words=WORDS),
        message(post={"id": 4, "j": {"a": [1, num("2.50")]}, "b": ""}, words=WORDS),
        message(post={"id": 5, "x": True, "y": 7}, words={"id": "INT64", "x": "BOOL", "y": "YEAR"}),
        message(post={"id": 6, "x": "anything", "y": 7}, words={"id": "INT", "x": "NO_SUCH_TYPE", "y": "FLOAT"}),
        message(post=row, words={"nope": "INT"}),  # no declared column in the images: all inferred
        message(post={"id": 7, "name": "n"}, words={"id": "INT", "name": " varchar(20) "}),
        message(post=row, words=WORDS, record_primary_key="id\u0001name\u0001flag"),
    ]
    for doc in taken:
        assert check(EXTEND, dumps(doc)), doc
    # post's type word wins over prev's; the prior image's own columns are declared too.
    prev = {**row, "__light_type": {"name": {"schemaType": "INT"}, "ratio": {"schemaType": "DOUBLE"}}}
    post = {"id": 1, "name": "z", "__light_type": {n: {"schemaType": w} for n, w in WORDS.items() if n != "ratio"}}
    assert check(EXTEND, dumps({"allMetaData": META, "recordType": "UPDATE", "prevStruct": prev, "postStruct": post}))
    declined = [
        message(post={**row, "extra": 1}, words=WORDS),  # declared and inferred columns mixed
        message(post=row, words={**WORDS, "ratio": None}),  # type null: inferred, among declared ones
        message(post=row, words=WORDS, dbType="OB_ORACLE"),  # Oracle-mode DATE: Python
        message(post=row, words={**WORDS, "name": "  "}),  # a blank word: a reject
        message(post={**row, "d": "2020-02-30"}, words=WORDS),  # an invalid time: kept verbatim by Python
        message(post={**row, "dt": "2020-11-25 00:01:02 Asia/Shanghai"}, words=WORDS),
        message(post={**row, "id": num("1.0")}, words=WORDS),
        message(post={**row, "id": "007"}, words=WORDS),
        message(post={**row, "ratio": num("1e400")}, words=WORDS),
        message(post={**row, "ratio": num("-0")}, words=WORDS),
        message(post={**row, "ratio": num("18446744073709551616")}, words=WORDS),
        message(post={**row, "ratio": "nan"}, words=WORDS),
        message(post={**row, "name": 5}, words=WORDS),
        message(post={**row, "b": "AP8"}, words=WORDS),  # not canonical base64
        message(post={**row, "at": "-1.5"}, words=WORDS),
        message(post={**row, "flag": True}, words=WORDS),
        message(post=row, words=WORDS, record_primary_key="dt"),
    ]
    for doc in declined:
        assert the_lane(EXTEND).parse(dumps(doc), TOPIC, 3, 0) is None, doc
        python_records(EXTEND, dumps(doc), context(), 0)
    assert the_lane(EXTEND).planned() >= 1


def test_lane_only_without_options() -> None:
    for format_id in FORMATS:
        assert lane_for(format_id, context()) is not None
        assert lane_for(format_id, context(bytes_encoding="hex")) is None


_NUMBERS = st.sampled_from(
    ["0", "-0", "7", "-7", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
     "18446744073709551616", "123456789012345678901234567890", "1.50", "-0.0", "0.1", "1e3", "1E+5", "2.5e-7",
     "1e400", "-1e-400", "1606233662", "1606233662.012345", "1606233662.123456789", "253402300800", "2024",
     "10000", "1", "0.000000001"]
)  # fmt: skip
_TEXTS = st.sampled_from(
    ["", "0", "-1", "007", "1.5", "-0.0", "1e3", "nan", "inf", "2024-02-30", "2024-02-29", "2024-02-29 23:59:59.999999",
     "0000-00-00", "0000-00-00 00:00:00", "1724358620", "1724358620.1234567", "-1.5", "253402300800", "12:00",
     "838:59:59.000001", "-00:00:01", " 1", "1 ", "true", "FALSE", "\u00e9", "AP8=", "AP8", "YQ==", "YR==", "a b",
     "2021-03-14 02:30:00", "2021-11-07 01:30:00", "2020-11-25 00:01:02 Asia/Shanghai", "2020-11-25T00:01:02",
     "[1, 2]", '{"k": 1}']
)  # fmt: skip
_SCALARS = st.one_of(st.none(), st.booleans(), _TEXTS, st.text(max_size=6), _NUMBERS.map(num))
_VALUES = st.one_of(_SCALARS, st.lists(_SCALARS, max_size=2), st.dictionaries(st.sampled_from("ab"), _SCALARS))
_WORDS = st.sampled_from(
    ["BIGINT", "INT64", "INT", "TINYINT", "DECIMAL", "DOUBLE", "FLOAT", "VARCHAR", "JSON", "BLOB", "DATE", "TIME",
     "DATETIME", "TIMESTAMP", "BOOL", "YEAR", "BIT", "GEOMETRY", "NO_SUCH_TYPE", "ZONED_DATETIME", "decimal(10,2)"]
)  # fmt: skip
_COLUMNS = ["id", "a", "b", "c"]
_IMAGES = st.dictionaries(st.sampled_from(_COLUMNS), _VALUES, max_size=4)


@settings(max_examples=400, deadline=None)
@given(
    prev=_IMAGES | st.none(),
    post=_IMAGES | st.none(),
    words=st.dictionaries(st.sampled_from(_COLUMNS), _WORDS, max_size=4) | st.none(),
    kind=st.sampled_from(["INSERT", "UPDATE", "DELETE", "update"]),
    zone_name=st.sampled_from(ZONES),
    key=st.sampled_from(["id", "", "a\u0001id"]),
)
def test_mutated_values(
    *,
    prev: dict[str, Any] | None,
    post: dict[str, Any] | None,
    words: dict[str, str] | None,
    kind: str,
    zone_name: str,
    key: str,
) -> None:
    prev = None if prev is None else {"id": 1, **prev}
    post = None if post is None else {"id": 2, **post}
    doc = message(kind, prev=prev, post=post, words=words, record_primary_key=key)
    for format_id in FORMATS:
        check(format_id, dumps(doc), zone_name)


_FIELD_VALUES = st.one_of(
    st.none(),
    st.sampled_from(["", "0", "-5", "007", "1735689600", "1735689600123", "x", " 1", "1.5", "99999999999999999999",
                     "MYSQL", "ob_mysql", "OB_ORACLE", "DB2", " db", "a.b", ".b", "a.", "\u00e9", "id\u0001a"]),
    _NUMBERS.map(num),
    st.booleans(),
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    fields=st.dictionaries(
        st.sampled_from(
            ["checkpoint", "record_primary_key", "dbType", "storeDataSequence", "table_name", "db", "timestamp",
             "uniqueId"]
        ),
        _FIELD_VALUES,
        max_size=4,
    ),
    kind=st.sampled_from(["INSERT", "UPDATE", "DELETE", "HEARTBEAT", "Insert", "\u0130NSERT"]) | st.integers(0, 9),
)  # fmt: skip
def test_mutated_envelope(fields: dict[str, Any], kind: Any) -> None:
    row = {"id": 1, "a": "x"}
    doc = message("INSERT", prev=row, post=row, words={"id": "INT64"} if fields.get("db") == "" else None, **fields)
    doc["recordType"] = kind
    if kind in ("INSERT", "Insert"):
        doc["prevStruct"] = None
    for format_id in FORMATS:
        check(format_id, dumps(doc))


GENERATED: dict[str, list[dict[str, Any]]] = {
    format_id: [orjson.loads(raw) for _, raw in messages(format_id, Workload(seed=8, tables=2), 60, "UTC")]
    for format_id in FORMATS
}


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mixed_rows(data: st.DataObject) -> None:
    """Generated messages whose values are swapped with other rows' or mutated (re-encoded exactly)."""
    format_id = data.draw(st.sampled_from(FORMATS))
    doc = copy.deepcopy(data.draw(st.sampled_from(GENERATED[format_id])))
    donors = [image for other in GENERATED[format_id] for image in (other["prevStruct"], other["postStruct"]) if image]
    for key in ("prevStruct", "postStruct"):
        image = doc[key]
        if image is None:
            continue
        names = sorted(name for name in image if name != "__light_type")
        for name in data.draw(st.lists(st.sampled_from(names), max_size=3)):
            donor = data.draw(st.sampled_from(donors))
            image[name] = donor[name] if name in donor and data.draw(st.booleans()) else data.draw(_VALUES)
    check(format_id, dumps(doc), data.draw(st.sampled_from(ZONES)))


FLIP_SOURCE = [(f, raw) for f in FORMATS for _, raw in messages(f, Workload(seed=5, tables=2), 30, "UTC")]


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=len(FLIP_SOURCE) - 1), st.data())
def test_flipped_bytes(which: int, data: st.DataObject) -> None:
    format_id, source = FLIP_SOURCE[which]
    raw = bytearray(source)
    at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[at] = data.draw(st.integers(min_value=0, max_value=255))
    cut = data.draw(st.just(len(raw)) | st.integers(min_value=1, max_value=len(raw)))
    check(format_id, bytes(raw[:cut]))
