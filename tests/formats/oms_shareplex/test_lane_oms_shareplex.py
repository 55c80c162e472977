"""The oms-shareplex lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give; it may decline anything. Checked on the golden corpus, on
generated traffic in three zones (and of an OceanBase tenant), on meta times in
DST gaps and folds, on messages whose values and envelope fields hypothesis
mutates, and on flipped bytes.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.services.oms_shareplex.parser import parse
from binlake.shared.cli.generate import messages
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.formats.oms_default.test_lane_oms_default import _NUMBERS, _VALUES, ZONES, num
from tests.support.lane_support import NEEDS_LANE, corpus_agreement, python_records

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "oms-shareplex"
TOPIC = "vendor.topic"


def context(zone_name: str = "UTC", **options: Any) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=options)


LANES: dict[str, Lane] = {}


def the_lane(zone_name: str = "UTC") -> Lane:
    if zone_name not in LANES:
        lane = lane_for(FORMAT, context(zone_name))
        assert lane is not None
        LANES[zone_name] = lane
    return LANES[zone_name]


def check(raw: bytes, zone_name: str = "UTC", offset: int = 41) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    fast = the_lane(zone_name).parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(FORMAT, raw, context(zone_name), TOPIC, offset), raw[:600]
    return True


def test_golden_corpus() -> None:
    seen, taken = corpus_agreement(FORMAT, TOPIC)
    assert seen >= 20 and taken >= 6  # every row case that is not a reject


@pytest.mark.parametrize("zone_name", ZONES)
@pytest.mark.parametrize("seed", [11, 2024])
def test_generated_traffic(seed: int, zone_name: str) -> None:
    items = messages(FORMAT, Workload(seed=seed, tables=4), 1500, zone_name)
    taken = sum(check(raw, zone_name, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message


def test_generated_tenant_traffic() -> None:
    render_fn = render.get(FORMAT)
    ctx = render.RenderContext(zone=zone("Asia/Shanghai"), options={"tenant": "t1"})
    items = [render_fn(change, ctx) for change in Workload(seed=7, tables=3).run(300)]
    taken = sum(check(raw, "Asia/Shanghai", offset) for offset, raw in enumerate(items))
    assert taken == len(items)


META: dict[str, Any] = {
    "posttime": "2025-01-01T00:00:01",
    "op": "ins",
    "size": 1,
    "time": "2025-01-01T00:00:00",
    "idx": "1/1",
    "seq": 1,
    "table": "shop.t",
    "rowid": "shop.t-1",
    "trans": "1001",
    "scn": "173568960000000001",
}
ROW: dict[str, Any] = {"id": 1, "price": num("-12.3400"), "name": "x", "big": num("18446744073709551616"), "n": None}


def message(op: str = "ins", data: Any = ROW, key: Any = None, *, drop: tuple[str, ...] = (), **meta: Any) -> bytes:
    doc: dict[str, Any] = {"data": data, "meta": {**META, "op": op, **meta}}
    if key is not None:
        doc["key"] = key
    for name in drop:
        doc["meta"].pop(name)
    return orjson.dumps(doc)


def test_update_after_image_is_the_prior_row_overlaid_with_the_changes() -> None:
    # Issue 16, item 15: the lane takes an update and writes the full after image, as Python does.
    raw = message("upd", {"name": "y"}, ROW)
    assert check(raw)
    (event,) = parse(raw, context().at(TOPIC, 3, 41)).events
    assert event.after is not None and list(event.after) == list(ROW) and event.after["name"] == "y"


def test_takes_and_declines() -> None:
    taken = [
        message(),
        message("upd", {"name": "y"}, ROW),
        message("upd", {}, ROW),  # nothing changed: the after image is the prior row
        message("upd", {"extra": 1, "name": None}, ROW),  # a changed column the prior row lacks
        message("del", ROW),
        message("INS"),
        message(table="t1.shop.t"),
        message(table="t1.a.b.t"),
        message(table="t"),
        message(table=".t"),
        message(scn="null", seq=None, trans="NULL"),
        message(scn=None, time=None, posttime=None),  # no times
        message(scn=num("42")),
        message(scn="123456789012345678901"),  # verbatim: not the order key
        message(time="2025-01-01 00:00:00.5", posttime="1969-12-31T23:59:59.999"),
        message(drop=("posttime", "seq", "trans")),
    ]
    for raw in taken:
        assert check(raw), raw
    for zone_name in ("America/New_York", "Asia/Shanghai"):
        for time in ("2021-03-14T02:30:00", "2021-11-07T01:30:00", "2021-11-07T01:30:00.25"):  # gap, fold
            assert check(message(time=time, posttime=time), zone_name)
    declined = [
        message("ddl", None, sql={"ddl": "TRUNCATE TABLE t"}),
        message("upd", {"name": "y"}),  # no prior values: a reject
        message("upd", {"name": "y"}, {}),
        message(data={}),
        message(data=None),
        message(data=[1]),
        message(" ins"),
        message(table=""),
        message(table="shop."),  # no table name: a reject
        message(time="2025-01-01"),
        message(time=" 2025-01-01T00:00:00"),
        message(time="2025-02-30T00:00:00"),
        message(scn=" null"),
        message(scn=num("1.5")),
    ]
    for raw in declined:
        assert the_lane().parse(raw, TOPIC, 3, 0) is None, raw
        python_records(FORMAT, raw, context(), TOPIC, 0)  # Python reads (or rejects) it


def test_lane_only_without_options() -> None:
    assert lane_for(FORMAT, context(bytes_encoding="hex")) is None


_IMAGES = st.dictionaries(st.sampled_from(["id", "a", "b", "c"]), _VALUES, max_size=4)
_FIELDS = st.one_of(
    st.none(),
    st.sampled_from(["", "null", "Null ", "0", "007", "x", "1.5", "99999999999999999999", "a.b", ".b", "a.", "a.b.c",
                     "\u00e9", "2021-03-14T02:30:00", "2021-11-07 01:30:00.123456", "2024-02-29T23:59:59",
                     "0001-01-01T00:00:00", "9999-12-31T23:59:59.999999", "2024-13-01T00:00:00"]),
    _NUMBERS.map(num),
    st.booleans(),
)  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(
    data=_IMAGES | st.none(),
    key=_IMAGES | st.none(),
    op=st.sampled_from(["ins", "upd", "del", "UPD"]),
    meta=st.dictionaries(st.sampled_from(["time", "posttime", "scn", "seq", "trans", "table"]), _FIELDS, max_size=3),
    zone_name=st.sampled_from(ZONES),
)
def test_mutated(
    *, data: dict[str, Any] | None, key: dict[str, Any] | None, op: str, meta: dict[str, Any], zone_name: str
) -> None:
    check(message(op, data, key, **meta), zone_name)


GENERATED: list[dict[str, Any]] = [
    orjson.loads(raw) for _, raw in messages(FORMAT, Workload(seed=8, tables=2), 60, "UTC")
]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mixed_rows(data: st.DataObject) -> None:
    doc = copy.deepcopy(data.draw(st.sampled_from(GENERATED)))
    for part in ("data", "key"):
        image = doc.get(part)
        if not image:
            continue
        for name in data.draw(st.lists(st.sampled_from(sorted(image)), max_size=3)):
            image[name] = data.draw(_VALUES)
    check(orjson.dumps(doc), data.draw(st.sampled_from(ZONES)))


FLIP_SOURCE = [raw for _, raw in messages(FORMAT, Workload(seed=5, tables=2), 30, "UTC")]


@settings(max_examples=300, deadline=None)
@given(st.integers(min_value=0, max_value=len(FLIP_SOURCE) - 1), st.data())
def test_flipped_bytes(which: int, data: st.DataObject) -> None:
    raw = bytearray(FLIP_SOURCE[which])
    at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
    raw[at] = data.draw(st.integers(min_value=0, max_value=255))
    cut = data.draw(st.just(len(raw)) | st.integers(min_value=1, max_value=len(raw)))
    check(bytes(raw[:cut]))
