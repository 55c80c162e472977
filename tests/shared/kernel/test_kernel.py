"""The native fast lane against the Python path, byte for byte.

A lane may decline any message; whatever it takes must give exactly what the
Python parser + Avro encoder + record key give: the same records in the same
order (key bytes, value bytes, table, op, event time). Checked on the golden
corpus, on generated traffic in two time zones, and on messages whose values,
fields and bytes hypothesis mutates (the lane must decline what Python
rejects or reads differently).
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

TOPIC = "vendor.topic"


def context(zone_name: str = "UTC", **options: str) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=dict(options))


def the_lane(ctx: ParseContext) -> Lane:
    lane = lane_for("canal-json", ctx)
    assert lane is not None
    return lane


def python_records(raw: bytes, ctx: ParseContext, offset: int) -> Taken | None:
    """What the runtime publishes for ``raw`` through the Python parser, in the lane's shape (None: a reject)."""
    return python_records_of("canal-json", raw, ctx, TOPIC, offset)


def check(lane: Lane, raw: bytes, ctx: ParseContext, offset: int = 41) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    fast = lane.parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(raw, ctx, offset), raw[:300]
    return True


def test_the_ci_build_has_the_lane() -> None:
    assert available()


def test_golden_corpus() -> None:
    _, taken = corpus_agreement("canal-json", TOPIC)
    assert taken >= 7  # the ordinary messages (published samples, multi-row, partial old) take the lane


@pytest.mark.parametrize(
    ("zone_name", "seed"), [("UTC", 1), ("UTC", 2024), ("Asia/Shanghai", 7), ("America/New_York", 3)]
)
def test_generated_traffic(zone_name: str, seed: int) -> None:
    ctx = context(zone_name)
    lane = the_lane(ctx)
    items = messages("canal-json", Workload(seed=seed, tables=4), 3000, zone_name)
    taken = sum(check(lane, raw, ctx, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary Canal message


def test_declines_what_it_does_not_handle() -> None:
    ctx = context()
    lane = the_lane(ctx)
    base: dict[str, Any] = {
        "data": [{"id": "1", "v": "2"}],
        "database": "d",
        "table": "t",
        "type": "INSERT",
        "isDdl": False,
        "es": 1,
        "ts": 2,
        "id": 3,
        "pkNames": ["id"],
        "mysqlType": {"id": "bigint", "v": "int"},
    }
    assert check(lane, json.dumps(base).encode(), ctx)
    declined = [
        {**base, "type": "ALTER", "isDdl": True, "sql": "ALTER TABLE t ADD c int"},  # DDL
        {k: v for k, v in base.items() if k != "id"},  # no id: the OMS profile
        {**base, "data": [{"id": "01", "v": "2"}]},  # a leading zero
        {**base, "data": [{"id": 1, "v": "2"}]},  # a number where Canal writes text
        {**base, "data": [{"id": "1", "v": "2", "w": "x"}]},  # an undeclared (inferred) column
        {**base, "data": [{"v": "2"}]},  # the key column missing: Python rejects it
        {**base, "es": 1.5},
        {**base, "mysqlType": {}, "sqlType": {"id": -5, "v": 4}},  # JDBC codes only
    ]
    for doc in declined:
        raw = json.dumps(doc).encode()
        assert lane.parse(raw, TOPIC, 3, 0) is None, doc
    assert lane.parse(b'{"id": 1, "id": 2}', TOPIC, 3, 0) is None  # a repeated key
    assert lane.parse(b"\xef\xbb\xbf{}", TOPIC, 3, 0) is None
    assert lane.parse(b"", TOPIC, 3, 0) is None


def test_other_options_and_formats_have_no_lane() -> None:
    assert lane_for("canal-json", context(bytes_encoding="base64")) is None
    assert lane_for("debezium-json", context(primary_key="id", bytes_encoding="hex")) is None
    assert lane_for("canal-json", context(bytes_encoding="latin1")) is not None
    with pytest.raises(ConfigError, match="unknown format 'no-such-format'"):
        lane_for("no-such-format", context())


TEMPLATE = messages("canal-json", Workload(seed=5, tables=1), 40, "UTC")
DOCS = [json.loads(raw) for _, raw in TEMPLATE]
COLUMNS = sorted(DOCS[0]["mysqlType"])

# Value texts near the edges of each converter's strict subset.
EDGE_TEXTS = [
    "0", "-0", "007", "1e3", "1.5e-3", " 1", "1 ", "+1", "9223372036854775807", "9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "1" * 39, "0.0000001", "1." + "0" * 41, "-0.00",
    "2024-02-29", "2023-02-29", "0000-00-00", "2024-13-01", "2024-01-01 24:00:00", "2024-01-01T10:00:00",
    "2024-01-01 10:00:00.1234567", "2024-01-01 10:00:00.5", "838:59:59", "-838:59:59.000001", "12:60:00",
    "true", "TRUE", "nan", "inf", "Infinity", "", "\u00ff\u0100", "٣", "1_000", ".5", "5.",
]  # fmt: skip
value_texts = st.one_of(
    st.sampled_from(EDGE_TEXTS),
    st.text(max_size=12),
    st.from_regex(r"-?[0-9]{1,25}(\.[0-9]{1,45})?", fullmatch=True),
    st.from_regex(r"[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,8})?)?", fullmatch=True),
)


ZONES = ["UTC", "America/New_York", "Europe/London", "Asia/Shanghai"]


@settings(max_examples=500)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    column=st.sampled_from(COLUMNS),
    text=value_texts,
    in_old=st.booleans(),
    zone_name=st.sampled_from(ZONES),
)
def test_mutated_values(index: int, column: str, text: str, in_old: bool, zone_name: str) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    if in_old and doc["type"] == "UPDATE" and doc.get("old"):
        doc["old"][0][column] = text
    else:
        doc["data"][0][column] = text
    ctx = context(zone_name)
    check(the_lane(ctx), json.dumps(doc, ensure_ascii=bool(index % 2)).encode(), ctx)


# Wall-clock times around DST changes (a gap and a fold in New York and London) and old Shanghai DST.
@pytest.mark.parametrize("zone_name", ZONES)
@pytest.mark.parametrize(
    "stamp",
    [
        "2024-03-10 02:30:00", "2024-11-03 01:30:00.5", "2024-03-31 01:30:00", "2024-10-27 01:30:00",
        "1988-04-10 02:30:00", "1988-09-11 01:30:00", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999",
    ],
)  # fmt: skip
def test_timestamps_across_zone_changes(zone_name: str, stamp: str) -> None:
    ctx = context(zone_name)
    doc = json.loads(json.dumps(DOCS[0]))
    timestamp_columns = [name for name, text in doc["mysqlType"].items() if text.startswith("timestamp")]
    assert timestamp_columns
    for name in timestamp_columns:
        doc["data"][0][name] = stamp
    check(the_lane(ctx), json.dumps(doc).encode(), ctx)


json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=10)


@settings(max_examples=400)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from(["type", "isDdl", "es", "ts", "id", "database", "table", "gtid", "pkNames", "old", "data"]),
    value=json_scalars | st.lists(json_scalars, max_size=3),
    drop=st.booleans(),
)
def test_mutated_envelope(index: int, field: str, value: Any, drop: bool) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    if drop:
        doc.pop(field, None)
    else:
        doc[field] = value
    ctx = context()
    try:
        raw = json.dumps(doc).encode()
    except ValueError:
        return
    check(the_lane(ctx), raw, ctx)


@settings(max_examples=300)
@given(index=st.integers(min_value=0, max_value=len(TEMPLATE) - 1), data=st.data())
def test_flipped_bytes(index: int, data: st.DataObject) -> None:
    raw = bytearray(TEMPLATE[index][1])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    ctx = context()
    check(the_lane(ctx), bytes(raw), ctx)


def test_lanes_may_be_freed_and_used_on_other_threads() -> None:
    # Python's garbage collector frees a lane on whatever thread triggers it (Spark's py4j
    # thread did, in a test run): that must be harmless, and so must a call from another thread.
    import gc
    import sys
    import threading

    raw = TEMPLATE[0][1]
    ctx = context()
    lanes: list[Lane] = [the_lane(ctx)]
    lanes[0].parse(raw, TOPIC, 3, 0)
    seen: list[Any] = []
    hook = sys.unraisablehook
    sys.unraisablehook = seen.append

    def elsewhere() -> None:
        assert lanes[0].parse(raw, TOPIC, 3, 1) is not None
        lanes.clear()  # the last reference: the lane is freed on this thread
        gc.collect()

    try:
        worker = threading.Thread(target=elsewhere)
        worker.start()
        worker.join()
    finally:
        sys.unraisablehook = hook
    assert lanes == []
    assert seen == []
