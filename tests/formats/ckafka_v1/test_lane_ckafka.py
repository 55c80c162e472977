"""The ckafka-v1 lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic in three
zones, on ``TIME`` texts (every zone's DST gaps and folds, texts that are not
fixed-width date-times), on messages whose images and envelope fields
hypothesis mutates, and on flipped bytes.
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
from binlake.shared.kernel import Lane, Taken, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "ckafka-v1"
TOPIC = "vendor.topic"
ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Australia/Lord_Howe"]


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
    # The DML cases of strings and nulls; DDL, rejects and JSON-number values go to Python.
    assert seen >= 25 and taken >= 6


@pytest.mark.parametrize("zone_name", ZONES[:3])
@pytest.mark.parametrize("seed", [1, 2024])
def test_generated_traffic(seed: int, zone_name: str) -> None:
    items = messages(FORMAT, Workload(seed=seed, tables=4), 1500, zone_name)
    taken = sum(check(raw, zone_name, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary row message


BASE: dict[str, Any] = {
    "BINLOG_NAME": "mysql-bin.000003",
    "BINLOG_POS": 484,
    "DATABASE": "inventory",
    "EVENT_SERVER_ID": None,
    "GLOBAL_ID": None,
    "GROUP_ID": None,
    "NEW_VALUES": {"id": "1004", "first_name": "Anne Marie", "note": None, "名": '"q"\n'},
    "OLD_VALUES": None,
    "TABLE": "customers",
    "TIME": "20160611020500",
    "TYPE": "I",
}
OLD = {"id": "1004", "first_name": "Anne", "note": "x", "gone": None}


def test_takes_and_declines() -> None:
    assert check(dump(BASE))
    taken = [
        {**BASE, "TYPE": "l"},
        {**BASE, "TYPE": "i", "OLD_VALUES": {}},
        {**BASE, "TYPE": "U", "OLD_VALUES": OLD},
        {**BASE, "TYPE": "u", "OLD_VALUES": BASE["NEW_VALUES"]},  # nothing changed
        {**BASE, "TYPE": "U", "OLD_VALUES": {}, "NEW_VALUES": {}},
        {**BASE, "TYPE": "D", "OLD_VALUES": OLD, "NEW_VALUES": None},
        {**BASE, "TYPE": "d", "OLD_VALUES": OLD, "NEW_VALUES": {}},
        {**BASE, "GLOBAL_ID": "3E11FA47-71CA-11E1-9E33-C80AA9429562:23", "DATABASE": ""},
        {**BASE, "TIME": ""},
        {**BASE, "TIME": None},
        {**BASE, "BINLOG_POS": 0, "EVENT_SERVER_ID": 7, "extra": [1]},
        {**BASE, "BINLOG_POS": "484"},  # a digit string, as CKafka sometimes sends it
        {**BASE, "BINLOG_POS": "0000484"},
        {**BASE, "BINLOG_NAME": "mysql-bin"},  # no index: kept verbatim (the key is the input's Kafka order)
        {k: v for k, v in BASE.items() if k not in ("TIME", "GLOBAL_ID", "OLD_VALUES")},
    ]
    for doc in taken:
        assert check(dump(doc)), doc
    declined = [
        {**BASE, "TYPE": "X"},
        {**BASE, "TYPE": " I"},
        {**BASE, "TYPE": "I", "OLD_VALUES": OLD},  # documented as null: a reject
        {**BASE, "TYPE": "U"},  # no OLD_VALUES: a reject
        {**BASE, "TYPE": "D"},
        {**BASE, "BINLOG_POS": -1},
        {**BASE, "BINLOG_POS": " 484"},
        {**BASE, "BINLOG_POS": "-0"},
        {**BASE, "BINLOG_POS": 484.0},
        {**BASE, "TABLE": ""},
        {**BASE, "TIME": "2016061102050"},
        {**BASE, "TIME": "20160230020500"},
        {**BASE, "TIME": " 20160611020500"},
        {**BASE, "TIME": 20160611020500},
        {**BASE, "NEW_VALUES": {"id": 1004}},  # a JSON number: inferred as int64
        {**BASE, "NEW_VALUES": {"id": True}},
        {**BASE, "NEW_VALUES": {"id": ["a"]}},
        {**BASE, "NEW_VALUES": "x"},
        {**BASE, "GLOBAL_ID": 5},
        {"isDdl": True, "sql": "DROP TABLE t", "type": "ERASE", "database": "d", "table": "t", "es": 1, "id": 0},
    ]
    for doc in declined:
        assert the_lane().parse(dump(doc), TOPIC, 3, 0) is None, doc
    assert the_lane().parse(b'{"TYPE": "I", "TYPE": "I"}', TOPIC, 3, 0) is None
    assert the_lane().parse(b"", TOPIC, 3, 0) is None
    assert the_lane().planned() == 0


def test_options_stop_the_start() -> None:
    """ckafka-v1 reads no option: one given is a configuration error when the codec is built."""
    with pytest.raises(ConfigError, match="takes no options, got bytes_encoding"):
        python_records(dump(BASE), context(bytes_encoding="base64"), 41)


TIME_TEXTS = [
    "20240310020000", "20240310023000", "20240310030000", "20241103010000", "20241103013000", "20241103020000",
    "20240331023000", "20241027023000", "20240407014500", "20241006020000", "20241006021500", "20240407020000",
    "00010101000000", "00000101000000", "99991231235959", "20240229120000", "20230229120000", "20241301000000",
    "20241232000000", "20240101240000", "20240101006000", "20240101000060", "20240101000061", "19700101080000",
    "2024010100000", "202401010000000", "2024-01-01T000", "20240101 00000", "２０２４0101000000", "20240101000000 ",
]  # fmt: skip


@pytest.mark.parametrize("zone_name", ZONES)
def test_time_texts(zone_name: str) -> None:
    for text in TIME_TEXTS:
        check(dump({**BASE, "TIME": text}), zone_name)
    assert check(dump({**BASE, "TIME": "20240310023000"}), zone_name)  # a gap in New York


@settings(max_examples=400)
@given(
    text=st.from_regex(r"[0-9]{4}(0[0-9]|1[0-3])([0-3][0-9])([0-2][0-9])([0-6][0-9]){2}", fullmatch=True)
    | st.from_regex(r"[0-9]{12,15}", fullmatch=True),
    zone_name=st.sampled_from(ZONES),
)
def test_mutated_time(text: str, zone_name: str) -> None:
    check(dump({**BASE, "TIME": text}), zone_name)


TEMPLATE = messages(FORMAT, Workload(seed=5, tables=2), 80, "UTC")
DOCS = [json.loads(raw) for _, raw in TEMPLATE]
json_scalars = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=8)
json_values = json_scalars | st.lists(json_scalars, max_size=2) | st.dictionaries(st.text(max_size=3), json_scalars)


@settings(max_examples=500)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    which=st.sampled_from(["NEW_VALUES", "OLD_VALUES"]),
    column=st.sampled_from(["id", "qty", "name", "payload", "new", "名"]),
    value=json_values,
    drop=st.booleans(),
)
def test_mutated_images(index: int, which: str, column: str, value: Any, drop: bool) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    image = doc[which]
    if image is None:
        doc[which] = image = {}
    if drop:
        image.pop(column, None)
    else:
        image[column] = value
    try:
        raw = dump(doc)
    except ValueError:
        return
    check(raw)


@settings(max_examples=400)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from(
        ["TYPE", "BINLOG_NAME", "BINLOG_POS", "DATABASE", "TABLE", "GLOBAL_ID", "NEW_VALUES", "OLD_VALUES", "TIME"]
    ),
    value=json_values
    | st.sampled_from(["I", "i", "l", "U", "u", "D", "d", "L", "mysql-bin.1", "bin\u0663", "x" * 70 + "1", ""])
    | st.sampled_from(["0", "-1", "12 ", "\u0663", "9223372036854775807", "9223372036854775808", "1" * 41])
    | st.from_regex(r"[a-z.\-]{0,5}[0-9]{0,22}[a-z]{0,2}", fullmatch=True),
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
