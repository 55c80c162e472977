"""The oms-dataworks lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give; it may decline anything. Checked on the golden corpus, on
generated traffic in three zones (and of an OceanBase tenant), on messages whose
values, column types and envelope fields hypothesis mutates (numbers written
with their exact digits), and on flipped bytes.
"""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.cli.generate import messages
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.formats.oms_default.test_lane_oms_default import _NUMBERS, _VALUES, _WORDS, ZONES, num
from tests.support.lane_support import NEEDS_LANE, corpus_agreement, python_records

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "oms-dataworks"
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
    assert seen >= 30 and taken >= 7  # the row cases without zone-suffixed, invalid times or undeclared columns


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


COLUMNS: list[dict[str, Any]] = [
    {"name": "id", "type": "BIGINT"},
    {"name": "price", "type": "DECIMAL"},
    {"name": "ratio", "type": "DOUBLE"},
    {"name": "name", "type": "VARCHAR"},
    {"name": "at", "type": "TIMESTAMP"},
    {"name": "dt", "type": "DATETIME"},
    {"name": "d", "type": "DATE"},
    {"name": "b", "type": "BLOB"},
    {"name": "j", "type": "JSON"},
    {"name": "u", "type": None},
]
ROW: dict[str, Any] = {
    "id": 1,
    "price": num("-12.3400"),
    "ratio": num("0." + "0" * 300 + "1000000000000000025"),
    "name": "x",
    "at": "1719178347.507",
    "dt": "2020-04-08 00:47:34.267459",
    "d": "2018-05-22",
    "b": "AP8=",
    "j": {"k": [1, num("2.50")]},
    "u": 7,
}


def message(
    op: str = "INSERT",
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    *,
    columns: Any = COLUMNS,
    pk: Any = ("id",),
    source: dict[str, Any] | None = None,
    **payload: Any,
) -> bytes:
    doc = {
        "version": "2.0",
        "schema": {
            "source": {
                "dbType": "mysql",
                "dbVersion": None,
                "dbName": "shop",
                "schema": None,
                "table": "t",
                **(source or {}),
            },
            "column": columns,
            "pk": None if pk is None else list(pk),
        },
        "payload": {
            "before": None if before is None else {"data": before},
            "after": None if after is None else {"data": after},
            "op": op,
            "timestamp": {"eventTime": 1735689600000, "systemTime": 1735689600795, "checkpointTime": 1735689600},
            "ddl": None,
            "scn": "173568960000000001",
            **payload,
        },
        "extend": {},
    }
    return orjson.dumps(doc)


def test_takes_and_declines() -> None:
    row = ROW
    taken = [
        message(after=row),
        message("UPDATE", before=row, after={**row, "name": "y"}),
        message("UPDATE", after=row),
        message("UPDATE", before=row, after={"name": "y"}),  # the key from the new row: null
        message("DELETE", before=row),
        message(after={"id": 2}),  # declared columns absent from the image
        message(after={}, pk=None),
        message(after=row, columns=None),  # no types: every column inferred
        message(after=row, scn="null"),
        message(after=row, scn=None, timestamp={"eventTime": 5}),
        message(after=row, scn=num("42")),
        message(after=row, timestamp=None, scn="7"),
        message(after=row, scn="x", timestamp=None),  # no time, no numeric scn: the key is Kafka order
        message(after=row, source={"dbType": "ob_mysql", "dbName": "tenant.shop"}),
        message(after=row, source={"dbType": "OB_ORACLE", "dbName": ".shop", "schema": "S"}),
        message(after=row, source={"dbType": None, "dbName": None}),
        message(after=row, pk=["id", "name", "u"]),
        message(after={"id": "12", "price": 7, "ratio": 7, "at": 1606233662, "b": "", "j": "[]"}),
    ]
    for raw in taken:
        assert check(raw), raw
    declined = [
        message("insert", after=row),  # ops are case sensitive: a reject
        message("HEARTBEAT"),
        message("ALTER", ddl={"text": "ALTER TABLE t ADD c int"}),
        message("TRANSACTION_BEGIN"),
        message(after=row, before=row),  # an INSERT with a before image: a reject
        message("DELETE", before=row, after=row),
        message("DELETE"),
        message(after={**row, "extra": 1}),  # an undeclared column beside declared ones
        message(after=row, columns=[*COLUMNS, {"name": "id", "type": "INT"}]),
        message(after=row, columns=[{"name": "", "type": "INT"}]),
        message(after=row, pk=["nope"]),
        message(after=row, pk=["d"]),  # a date key: not rendered here
        message(after=row, source={"table": ""}),
        message(after=row, source={"dbType": "\u00e9"}),
        message(after={**row, "dt": "2020-11-25 00:01:02 Asia/Shanghai"}),
        message(after={**row, "d": "2020-02-30"}),  # an invalid date: verbatim in Python
        message(after={**row, "id": num("-0")}),
    ]
    for raw in declined:
        assert the_lane().parse(raw, TOPIC, 3, 0) is None, raw
        python_records(FORMAT, raw, context(), TOPIC, 0)  # Python reads (or rejects) it
    assert the_lane().parse(b'{"version": "1.0"}', TOPIC, 3, 0) is None
    assert the_lane().planned() >= 1


def test_lane_only_without_options() -> None:
    assert lane_for(FORMAT, context(bytes_encoding="hex")) is None


_NAMES = ["id", "a", "b", "c"]


@settings(max_examples=400, deadline=None)
@given(
    before=st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=4) | st.none(),
    after=st.dictionaries(st.sampled_from(_NAMES), _VALUES, max_size=4) | st.none(),
    words=st.lists(st.tuples(st.sampled_from(_NAMES), _WORDS | st.none()), max_size=4, unique_by=lambda c: c[0]),
    op=st.sampled_from(["INSERT", "UPDATE", "DELETE"]),
    zone_name=st.sampled_from(ZONES),
)
def test_mutated_values(
    *,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    words: list[tuple[str, str | None]],
    op: str,
    zone_name: str,
) -> None:
    columns = [{"name": name, "type": word} for name, word in words] or None
    check(message(op, before=before, after=after, columns=columns, pk=["id"] if words else None), zone_name)


_FIELDS = st.one_of(
    st.none(),
    st.sampled_from(["", "null", "0", "-5", "007", "x", " 1", "1.5", "99999999999999999999", "ob_mysql", "OB_x",
                     "a.b", ".b", "a.", "\u00e9"]),
    _NUMBERS.map(num),
    st.booleans(),
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(
    source=st.dictionaries(st.sampled_from(["dbType", "dbName", "schema", "table"]), _FIELDS, max_size=3),
    stamps=st.dictionaries(st.sampled_from(["eventTime", "systemTime", "checkpointTime"]), _FIELDS, max_size=3),
    scn=_FIELDS,
)
def test_mutated_envelope(source: dict[str, Any], stamps: dict[str, Any], scn: Any) -> None:
    check(message(after=ROW, source=source, timestamp=stamps, scn=scn))


GENERATED: list[dict[str, Any]] = [
    orjson.loads(raw) for _, raw in messages(FORMAT, Workload(seed=8, tables=2), 60, "UTC")
]


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mixed_rows(data: st.DataObject) -> None:
    doc = copy.deepcopy(data.draw(st.sampled_from(GENERATED)))
    for key in ("before", "after"):
        image = doc["payload"][key]
        if image is None:
            continue
        for name in data.draw(st.lists(st.sampled_from(sorted(image["data"])), max_size=3)):
            image["data"][name] = data.draw(_VALUES)
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
