"""The oms-avro lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic in two
zones, on records whose image items and envelope fields hypothesis mutates
(re-encoded with fastavro under the DTS schema), and on flipped bytes.
"""

from __future__ import annotations

import copy
import io
from typing import Any

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.oms_avro.parser import parsed_schema
from binlake.services.oms_avro.values import TYPE_CODES
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

FORMAT = "oms-avro"
TOPIC = "vendor.topic"
NS = "com.alibaba.dts.formats.avro."
ZONES = ["UTC", "Asia/Shanghai", "America/New_York"]


def context(zone_name: str = "UTC") -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name))


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


def encode(record: dict[str, Any], born: int | None = None) -> bytes:
    out = io.BytesIO()
    if born is None:
        fastavro.schemaless_writer(out, parsed_schema(), record)
    else:
        fastavro.schemaless_writer(out, parsed_schema(True), {**record, "bornTimestamp": born})
    return out.getvalue()


# ------------------------------------------------------------------ image items


def integer(text: str) -> Any:
    return (NS + "Integer", {"precision": 8, "value": text})


def chars(raw: bytes, charset: str = "utf8mb4") -> Any:
    return (NS + "Character", {"charset": charset, "value": raw})


def dec(text: str, precision: int = 10, scale: int = 2) -> Any:
    return (NS + "Decimal", {"value": text, "precision": precision, "scale": scale})


def flt(value: float) -> Any:
    return (NS + "Float", {"value": value, "precision": 8, "scale": 64})


def stamp(seconds: int, micros: int = 0) -> Any:
    return (NS + "Timestamp", {"timestamp": seconds, "millis": micros})


def dt(**parts: int | None) -> Any:
    return (NS + "DateTime", {k: parts.get(k) for k in ("year", "month", "day", "hour", "minute", "second", "millis")})


def obj(kind: str, value: Any, type_name: str = "BLOB") -> Any:
    return (NS + kind, {"type": type_name, "value": value})


def empty(symbol: str) -> Any:
    return (NS + "EmptyObject", symbol)


FIELDS = [
    ("id", 8), ("name", 15), ("price", 246), ("ratio", 5), ("at", 17), ("dt", 18), ("d", 10), ("tm", 19),
    ("b", 252), ("j", 245), ("y", 13), ("vb", 15), ("txt", 252), ("nul", 6),
]  # fmt: skip
ROW = [
    integer("1"), chars(b"x"), dec("1.50"), flt(0.25), stamp(1700000000, 123456),
    dt(year=2024, month=2, day=29, hour=23, minute=59, second=59, millis=999999), dt(year=1999, month=12, day=31),
    dt(hour=-838, minute=-59, second=-59, millis=0), obj("BinaryObject", b"\x00\xff"),
    obj("TextObject", '{"a": 1}', "JSON"), dt(year=2024), chars(b"\x01\x02", "binary"), chars("長".encode()), None,
]  # fmt: skip


ODD_ROW = [
    ROW[0], chars(b"a", "UTF-8"), dec("-0.001"), flt(-0.0), stamp(-9223372022400),
    dt(year=0, month=0, day=0, hour=0, minute=0, second=0, millis=0), dt(year=2023, month=2, day=29),
    dt(hour=1, minute=-2, second=3), obj("BinaryGeometry", b"\x01"), obj("TextGeometry", "POINT(1 2)"),
    dt(year=-5, month=None), obj("BinaryObject", b""), obj("TextObject", "t"), None,
]  # fmt: skip
"""Unusual values of every kind FIELDS holds: zero and invalid dates, OMS's invalid TIMESTAMP, text in
a VARBINARY column, bytes in a TEXT one..."""
EDGE_ROW = [
    ROW[0], chars(b"ascii", "ascii"), dec("12"), flt(1e308), stamp(-62135596800),
    dt(year=9999, month=12, day=31, hour=23, minute=59, second=59, millis=None), dt(year=2024, month=13, day=1),
    dt(hour=838, minute=59, second=59, millis=999999), chars(b"", "binary"), chars(b"{}"), integer("5"),
    obj("TextObject", "text in varbinary"), obj("BinaryObject", b"blob in text"), None,
]  # fmt: skip
"""Values at the ends of their ranges."""


def record(
    operation: str = "INSERT",
    fields: list[tuple[str, int]] | None = None,
    before: list[Any] | None = None,
    after: list[Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    fields = FIELDS if fields is None else fields
    out = {
        "version": 1,
        "id": 170000000012300001,
        "sourceTimestamp": 1700000000,
        "sourcePosition": "1700000000",
        "safeSourcePosition": "1699999999",
        "sourceTxid": "tx-42",
        "source": {"sourceType": "MySQL", "version": "OBMySQL"},
        "operation": operation,
        "objectName": "shop.orders",
        "processTimestamps": [1700000000500],
        "tags": {"pk_uk_info": '{"PRIMARY":["id"]}'},
        "fields": [{"name": n, "dataTypeNumber": c} for n, c in fields],
        "beforeImages": before,
        "afterImages": after,
    }
    out.update(top)
    return out


ZONED = (
    NS + "TimestampWithTimeZone",
    {"value": dt(year=2024, month=1, day=1, hour=8, minute=0, second=0)[1], "timezone": "+08:00"},
)


def one(item: Any, code: int) -> dict[str, Any]:
    """An INSERT of key 1 and one more column, of type ``code``, holding ``item``."""
    return record(fields=[("id", 8), ("c", code)], after=[integer("1"), item])


# ------------------------------------------------------------------ tests


def test_golden_corpus() -> None:
    seen, taken = corpus_agreement(FORMAT, TOPIC)
    # The row cases of known types and charsets: the four seeds, born timestamps, escaped dots,
    # three-part names, empty objects, invalid times, no key, a TIMESTAMP as a DateTime in a zone.
    assert seen >= 30 and taken >= 12


@pytest.mark.parametrize("zone_name", ["UTC", "Asia/Shanghai"])
@pytest.mark.parametrize("seed", [11, 2024])
def test_generated_traffic(seed: int, zone_name: str) -> None:
    items = messages(FORMAT, Workload(seed=seed, tables=4), 1500, zone_name)
    taken = sum(check(raw, zone_name, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message


def test_takes_and_declines() -> None:
    moved = [integer("1"), *ROW[1:]]
    taken = [
        record(after=ROW),
        record(after=ROW, id=-1),  # kept verbatim in source.sequence: the key is the input's Kafka order
        record("INIT", after=ROW, id=0, sourcePosition="", safeSourcePosition="", sourceTxid=""),
        record("UPDATE", before=[integer("1"), chars(b"old"), *ROW[2:]], after=moved),
        record("UPDATE", after=ROW),  # no prior image
        record("DELETE", before=ROW),
        record(after=ROW, objectName="orders"),  # one part: the table
        record(after=ROW, objectName="db.sch.t"),
        record(after=ROW, objectName="my\\u002Edb.t\\u002e1"),
        record(after=ROW, objectName=".t"),  # no database
        record(after=ROW, source={"sourceType": "Oracle", "version": "12c"}),
        record(after=ROW, source={"sourceType": "MySQL", "version": "obOracle"}),
        record(after=ROW, processTimestamps=None, tags={}),
        record(after=ROW, tags={"pk_uk_info": '{"PRIMARY":["name","id"],"UNIQUE":["x"]}', "other": "1"}),
        record(after=ROW, tags={"pk_uk_info": '{"UNIQUE":["name"]}'}),
        record(after=ROW, tags={"pk_uk_info": '{"PRIMARY":null}'}),
        record(after=ROW, tags={"pk_uk_info": '{"PRIMARY":["price","y","j"]}'}),
        record(after=ROW, tags={"pk_uk_info": ""}),
        record(after=[integer("18446744073709551615"), *[None] * 13]),  # BIGINT UNSIGNED: a BigInt key
        record(after=[integer("-9223372036854775808"), *[empty("NULL")] * 13]),
        record(after=[integer("2"), *[empty("NONE")] * 13]),  # absent columns: left out
        record(after=ODD_ROW),
        record(after=EDGE_ROW),
        record(fields=[], after=[], tags={}),
        one(dt(year=2024, month=1, day=1, hour=8, minute=0, second=0, millis=250000), 7),  # a TIMESTAMP's wall clock
    ]
    for rec in taken:
        assert check(encode(rec)), rec
        for zone_name in ZONES:
            check(encode(rec), zone_name)
    assert check(encode(record(after=ROW), born=1700000000777))
    assert check(encode(record(after=ROW, processTimestamps=[]), born=-1))

    declined = [
        record("DDL", fields=[], after=None, objectName="shop") | {"afterImages": "CREATE TABLE t (id int)"},
        record("HEARTBEAT", after=None),
        record("BEGIN", after=None),
        record(after=ROW, version=2),
        record(after=ROW, objectName=None),
        record(after=ROW, objectName="shop."),
        record(after=ROW, objectName="a.b.c.d"),
        record(after=ROW, tags={"pk_uk_info": "not json"}),
        record(after=ROW, tags={"pk_uk_info": '{"PRIMARY":"id"}'}),
        record(after=ROW, tags={"pk_uk_info": '{"PRIMARY":["id"],"PRIMARY":["name"]}'}),  # a repeated key
        record(after=ROW, tags={"pk_uk_info": '{"PRIMARY":["nope"]}'}),  # a missing key column
        record(after=ROW, tags={"pk_uk_info": '{"PRIMARY":["ratio"]}'}),  # a float key
        record(after=ROW, source={"sourceType": "MySQL", "version": "ÖB"}),
        record(after=ROW) | {"fields": None},
        record(after=ROW, fields=[("id", 8)]),  # more items than fields
        record(after=ROW[:3], fields=FIELDS[:4]),  # fewer
        record(after=[integer("1"), integer("2")], fields=[("id", 8), ("id", 3)]),  # a repeated name
        one(integer("2"), 99),  # an unknown type code
        one(integer("2"), 6),  # a value of unknown type
        one(integer(" 1"), 8),
        one(integer("007"), 8),
        one(chars(b"caf\xe9", "latin1"), 15),
        one(chars(b"\xff"), 15),  # not UTF-8: a reject
        one(dec("1e3"), 246),
        one(flt(float("nan")), 5),
        one(stamp(1, 1_000_000), 17),
        one(stamp(253402300800), 17),  # beyond 9999
        one(dt(hour=839, minute=0, second=0), 19),
        one(dt(year=2024, month=1, day=1, hour=24, minute=0, second=0), 18),
        one(dt(year=2024, month=1), 10),
        one(dt(year=-1, month=0, day=0), 10),  # rendered "-001-00-00" by Python
        one(ZONED, 17),
        record(before=ROW, after=ROW),  # an INSERT with a prior image
        record("DELETE", before=ROW, after=ROW),
        record("DELETE", after=ROW),
        record("UPDATE", before=ROW),
        record("UPDATE", before=ROW, after=[empty("NONE"), *ROW[1:]]),  # the key absent from the new row
        record(after=None) | {"afterImages": "text"},
    ]
    lane = the_lane()
    for rec in declined:
        raw = encode(rec)
        assert lane.parse(raw, TOPIC, 3, 0) is None, rec
        python_records(raw, context(), 0)  # Python reads (or rejects) it
    good = encode(record(after=ROW))
    for raw in (good + b"\x02\x00", good + b"\x80", good[:-1], b"", b"{}", b"\x02"):
        assert lane.parse(raw, TOPIC, 3, 0) is None
    assert lane.planned() == 0


def test_lane_only_without_options() -> None:
    assert lane_for(FORMAT, context()) is not None
    options = ParseContext(topic=TOPIC, options={"bytes_encoding": "hex"})
    assert lane_for(FORMAT, options) is None


# Item values at the edges of every conversion, in every record kind.
_TEXTS = st.sampled_from(
    ["", "0", "-0", "-1", "007", "1.5", "-0.0", "1.", ".5", "1e3", "NaN", "12a", " 1", "1 ", "+1", "1_0",
     "9223372036854775807", "9223372036854775808", "-9223372036854775809", "1" * 38, "1" * 39, "0.0000001",
     "\u0661", "\u00e9"]
)  # fmt: skip
_INTS = st.integers(min_value=-(2**31), max_value=2**31 - 1) | st.sampled_from(
    [0, 1, -1, 12, 13, 23, 24, 29, 30, 31, 59, 60, 838, 839, 999_999, 1_000_000, 9999, 10_000]
)
_LONGS = st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.sampled_from(
    [-9223372022400, -62135596800, -62135596801, 253402300799, 253402300800, 0, -1]
)
_DATETIME_PARTS = st.fixed_dictionaries(
    {k: st.none() | _INTS for k in ("year", "month", "day", "hour", "minute", "second", "millis")}
)
_ITEMS = st.one_of(
    st.none(),
    st.builds(integer, _TEXTS | st.text(max_size=6)),
    st.builds(
        chars,
        st.binary(max_size=6) | st.sampled_from([b"", "é".encode(), b"\xed\xa0\x80", b"\xff"]),
        st.sampled_from(["utf8mb4", "utf8", "UTF-8", "utf_8mb3", "ascii", "binary", "latin1", "gbk", "klingon"]),
    ),
    st.builds(dec, _TEXTS, _INTS, _INTS),
    st.builds(flt, st.floats(allow_nan=True, allow_infinity=True)),
    st.builds(stamp, _LONGS, _INTS),
    _DATETIME_PARTS.map(lambda parts: (NS + "DateTime", parts)),
    st.builds(obj, st.sampled_from(["BinaryObject", "BinaryGeometry"]), st.binary(max_size=4)),
    st.builds(obj, st.sampled_from(["TextObject", "TextGeometry"]), st.text(max_size=4)),
    st.builds(empty, st.sampled_from(["NULL", "NONE"])),
)
_CODES = st.sampled_from(sorted(TYPE_CODES))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.tuples(_CODES, _ITEMS, _ITEMS), min_size=1, max_size=5),
    st.sampled_from(["INSERT", "UPDATE", "DELETE", "INIT"]),
    st.sampled_from(ZONES),
    st.booleans(),
)
def test_mutated_items(columns: list[tuple[int, Any, Any]], operation: str, zone_name: str, keyed: bool) -> None:
    fields = [("id", 8)] + [(f"c{i}", code) for i, (code, _, _) in enumerate(columns)]
    new = [integer("1")] + [item for _, item, _ in columns]
    old = [integer("1")] + [item for _, _, item in columns]
    before = old if operation in ("UPDATE", "DELETE") else None
    after = None if operation == "DELETE" else new
    tags = {"pk_uk_info": '{"PRIMARY":["id","c0"]}'} if keyed else {}
    check(encode(record(operation, fields, before, after, tags=tags)), zone_name)


PK_TEXTS = [
    '{"PRIMARY":["id"]}', '{"PRIMARY":[]}', ' {"PRIMARY" : ["name"]} ', "[]", "{}", "1", '{"PRIMARY":[1]}',
    '{"PRIMARY":["\\u0069d"]}', '{"PRIMARY":NaN}', '{"PRIMARY":["id"],"UNIQUE":{"a":1,"a":2}}',
]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    ident=st.integers(min_value=-(2**63), max_value=2**63 - 1),
    seconds=st.integers(min_value=-(2**63), max_value=2**63 - 1) | st.integers(min_value=0, max_value=2**33),
    object_name=st.sampled_from(["shop.t", "t", "", ".", "a.b.c", "a..c", "a.b.c.d", "x\\u002Ey.t", "é.ü"]) | st.none(),
    stamps=st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=2) | st.none(),
    pk=st.sampled_from(PK_TEXTS) | st.none(),
    source=st.tuples(st.sampled_from(["MySQL", "Oracle", "OTHER"]), st.sampled_from(["OBMySQL", "5.7", "", "ob"])),
    text=st.sampled_from(["", "1700000000", "x"]),
    born=st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1),
)
def test_mutated_envelope(
    *,
    ident: int,
    seconds: int,
    object_name: str | None,
    stamps: list[int] | None,
    pk: str | None,
    source: tuple[str, str],
    text: str,
    born: int | None,
) -> None:
    rec = record(
        after=ROW,
        id=ident,
        sourceTimestamp=seconds,
        objectName=object_name,
        processTimestamps=stamps,
        tags={} if pk is None else {"pk_uk_info": pk},
        source={"sourceType": source[0], "version": source[1]},
        sourcePosition=text,
        sourceTxid=text,
    )
    check(encode(rec, born))


GENERATED: list[dict[str, Any]] = [
    fastavro.schemaless_reader(io.BytesIO(raw), parsed_schema(), None, return_record_name=True)  # type: ignore[misc]
    for _, raw in messages(FORMAT, Workload(seed=8, tables=2), 60, "UTC")
]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mixed_items(data: st.DataObject) -> None:
    """Generated records whose items are swapped with other records' (other columns, other kinds)."""
    rec = copy.deepcopy(data.draw(st.sampled_from(GENERATED)))
    donors = [item for other in GENERATED for item in (other["beforeImages"] or []) + (other["afterImages"] or [])]
    for key in ("beforeImages", "afterImages"):
        items = rec[key]
        if items is None:
            continue
        for at in data.draw(st.lists(st.integers(min_value=0, max_value=len(items) - 1), max_size=3)):
            items[at] = data.draw(st.sampled_from(donors) | _ITEMS)
    check(encode(rec), data.draw(st.sampled_from(ZONES)))


FLIP_SOURCE = [raw for _, raw in messages(FORMAT, Workload(seed=5, tables=2), 40, "UTC")]


@settings(max_examples=400, deadline=None)
@given(st.integers(min_value=0, max_value=len(FLIP_SOURCE) - 1), st.data())
def test_flipped_bytes(which: int, data: st.DataObject) -> None:
    raw = bytearray(FLIP_SOURCE[which])
    at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[at] = data.draw(st.integers(min_value=0, max_value=255))
    cut = data.draw(st.just(len(raw)) | st.integers(min_value=1, max_value=len(raw)))
    check(bytes(raw[:cut]))
