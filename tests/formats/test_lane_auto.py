"""The auto lane against the auto parser, byte for byte.

``auto`` detects each message's format and parses it with that format's
parser; its lane detects the same way and runs that format's lane. On traffic
mixing every format auto detects, whatever the lane takes must equal what the
auto parser + Avro encoder + record key give, and it must take every message
whose format's own lane takes it.
"""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from binlake.services.auto.parser import detect
from binlake.shared.cli.generate import messages
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.jsondoc import decode_fast
from tests.corpus_cases import cases
from tests.support.lane_support import NEEDS_LANE, corpus_agreement, python_records

pytestmark = [pytest.mark.unit, NEEDS_LANE]

TOPIC = "vendor.topic"
DETECTED = [
    "canal-json",
    "kafkariver-canal",
    "ckafka-v1",
    "drs-json",
    "maxwell-json",
    "ogg-json",
    "oms-default",
    "oms-extend-column-type",
    "oms-dataworks",
    "oms-shareplex",
    "oms-avro",
    "debezium-json",
]
"""Formats auto recognises with no options (debezium-smt needs its table mapping; drs-json-c and drs-avro
are never detected)."""


def context(zone_name: str) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name))


@pytest.mark.parametrize("zone_name", ["UTC", "Asia/Shanghai"])
def test_mixed_traffic_agrees_and_is_taken_where_the_detected_format_lane_takes_it(zone_name: str) -> None:
    ctx = context(zone_name)
    lane = lane_for("auto", ctx)
    assert lane is not None
    mixed = [
        (format_id, raw)
        for format_id in DETECTED
        for _, raw in messages(format_id, Workload(seed=31, tables=2), 60, zone_name)
    ]
    random.Random(5).shuffle(mixed)
    own_lanes: dict[str, Lane | None] = {}
    taken: Counter[str] = Counter()
    for offset, (format_id, raw) in enumerate(mixed):
        fast = lane.parse(raw, TOPIC, 3, offset)
        if fast is not None:
            assert fast == python_records("auto", raw, ctx, TOPIC, offset), (format_id, raw[:200])
            taken[format_id] += 1
        detected = "oms-avro" if not raw.lstrip().startswith(b"{") else python_detect(raw)
        assert detected is not None
        if detected not in own_lanes:
            own_lanes[detected] = lane_for(detected, ctx)
        own = own_lanes[detected]
        assert (fast is not None) == (own is not None and own.parse(raw, TOPIC, 3, offset) is not None), raw[:200]
    # Every format is detected as itself (the generated tables all have sized types) and taken whole.
    for format_id in DETECTED:
        assert taken[format_id] == 60, (format_id, taken)


@pytest.mark.parametrize("order", ["kafka", "position"])
def test_option_order_reaches_the_detected_formats(order: str) -> None:
    """auto hands option ``order`` to maxwell-json and debezium-json, parser and lane alike: the lane's
    records are the auto parser's, Maxwell messages without ``position`` included (Kafka keys under
    ``kafka``, rejects under ``position``); under ``kafka`` debezium-json has no lane (the parser's)."""
    ctx = ParseContext(topic=TOPIC, partition=3, offset=0, options={"order": order})
    lane = lane_for("auto", ctx)
    assert lane is not None
    maxwell = [raw for _, raw in messages("maxwell-json", Workload(seed=8, tables=2), 40, "UTC")]
    unpositioned = [
        json.dumps({k: v for k, v in json.loads(raw).items() if k != "position"}).encode() for raw in maxwell
    ]
    debezium = [raw for _, raw in messages("debezium-json", Workload(seed=8, tables=2), 40, "UTC")]
    taken: Counter[str] = Counter()
    rejected = 0
    for offset, (kind, raw) in enumerate(
        [("maxwell", raw) for raw in maxwell]
        + [("unpositioned", raw) for raw in unpositioned]
        + [("debezium", raw) for raw in debezium]
    ):
        expected = python_records("auto", raw, ctx, TOPIC, offset)
        rejected += expected is None
        fast = lane.parse(raw, TOPIC, 3, offset)
        if fast is not None:
            assert fast == expected, (kind, raw[:200])
            taken[kind] += 1
    if order == "kafka":
        assert (taken, rejected) == (Counter(maxwell=40, unpositioned=40), 0)
    else:
        assert (taken, rejected) == (Counter(maxwell=40, debezium=40), 40)


def detect_format(raw: bytes) -> str | None:
    from binlake.shared.kernel._kernel import detect_format as native  # built: NEEDS_LANE

    return native(raw)


def python_detect(raw: bytes) -> str | None:
    try:
        return detect(decode_fast(raw))
    except Exception:  # noqa: BLE001 - a reject: no format
        return None


DETECTION_SAMPLES = [
    b'{"__deleted": "true"}',
    b'{"payload": {"__deleted": null}}',
    b'{"payload": {"x": 1}}',
    b'{"payload": null, "version": "2.0"}',
    b'{"version": 2.0, "payload": {}}',
    b'{"NEW_VALUES": 1}',
    b'{"binlog": 1, "columns": 2, "event": 3}',
    b'{"binlog": 1, "columns": 2}',
    b'{"allMetaData": {}, "postStruct": {"__light_type": 1}}',
    b'{"allMetaData": {}, "prevStruct": "__light_type"}',
    b'{"meta": {"op": 1}}',
    b'{"meta": ["op"]}',
    b'{"op": "c", "source": {}}',
    b'{"ddl": "x", "databaseName": "d"}',
    b'{"op_type": "I", "table": "t"}',
    b'{"isDdl": false}',
    b'{"type": "DELETE", "data": [], "old": [{"a": 1}]}',
    b'{"type": "DELETE", "data": [], "old": []}',
    b'{"type": "DELETE", "data": [], "old": 0.0}',
    b'{"type": "DELETE", "data": [], "old": -0e5}',
    b'{"type": "DELETE", "data": [], "old": 1e-400}',
    b'{"type": "DELETE", "data": [], "old": 12}',
    b'{"type": "DELETE", "data": 0.000, "old": 1}',
    b'{"type": "DELETE", "data": [], "old": "x"}',
    b'{"type": "DELETE", "data": [], "old": ""}',
    b'{"type": "DELETE", "data": [], "old": {}}',
    b'{"type": "DELETE", "data": [], "old": true}',
    b'{"type": "INSERT", "data": [], "dbType": null}',
    b'{"type": "INSERT", "data": {}}',
    b'{"isDdl": false, "id": 1, "mysqlType": {"a": "int", "b": "varchar"}}',
    b'{"isDdl": false, "id": 1, "mysqlType": {"a": "var\\u0063har"}}',
    b'{"isDdl": false, "mysqlType": {"a": "varchar"}}',
    b'{"isDdl": false, "id": 1, "mysqlType": {"a": "varchar(64)", "b": "int"}}',
    b'{"isDdl": false, "id": 1, "mysqlType": {"a": ["decimal"]}}',
    b'{"isDdl": false, "id": 1, "mysqlType": ["decimal"]}',
    b'{"isDdl": false, "id": 1, "mysqlType": {"a": "decimal", "a": "int"}}',
    b'{"type": "insert", "database": "d", "ts": 1}',
    b'{"type": "insert", "database": "d"}',
    b'{"t\\u0079pe": "insert", "database": "d", "ts": 1}',
    b'{"type": "a", "type": "b", "database": "d", "ts": 1}',
    b"{}",
    b"[]",
    b"null",
    b'{"a": }',
]


@pytest.mark.parametrize("raw", DETECTION_SAMPLES)
def test_native_detection_is_the_python_rules(raw: bytes) -> None:
    found = detect_format(raw)
    assert found is None or found == python_detect(raw)
    undecided = (
        b"[]",
        b"null",
        b'{"a": }',
        b'{"type": "DELETE", "data": [], "old": 1e-400}',
        b'{"isDdl": false, "id": 1, "mysqlType": {"a": "decimal", "a": "int"}}',  # a repeated key: Python decides
    )
    if b'"type": "a", "type"' not in raw and raw not in undecided:
        assert found == python_detect(raw)  # every well-formed object is detected natively


def test_native_detection_on_generated_and_corpus_messages() -> None:
    samples = [raw for format_id in DETECTED for _, raw in messages(format_id, Workload(seed=4, tables=2), 40, "UTC")]
    samples += [case.raw() for case in cases()]
    native = 0
    for raw in samples:
        if not raw.lstrip().startswith((b"{", b"[", b"null")):
            continue
        found = detect_format(raw)
        if found is not None:
            assert found == python_detect(raw), raw[:200]
            native += 1
    assert native > len(samples) // 2


def test_golden_corpus() -> None:
    seen, taken = corpus_agreement("auto", TOPIC)
    assert seen > 0
    assert taken > 0


@pytest.mark.parametrize(
    "raw",
    [b"", b"   ", b"{", b"[1,2]", b"null", b'{"no": "format"}', b"\xff\xfe", b"\x00\x01\x02", b'{"type": "INSERT"}'],
)
def test_undetectable_or_broken_messages_are_declined(raw: bytes) -> None:
    lane = lane_for("auto", context("UTC"))
    assert lane is not None
    assert lane.parse(raw, TOPIC, 3, 0) is None


@pytest.mark.parametrize(
    "raw",
    [
        b"\x0b\x0c \t\r\n{}",
        b" \x0cnull",
        b"\x0b[1]",
        b"\x00\x01binary",
        b"",
        b"  ",
        b"nul",
        b"\xc2\xa0{}",
        b'\n{"isDdl": false}',
        *DETECTION_SAMPLES,
    ],
)
def test_auto_format_is_the_auto_parsers_first_test_then_its_rules(raw: bytes) -> None:
    from binlake.shared.kernel._kernel import auto_format

    found = auto_format(raw)
    if not raw.lstrip().startswith((b"{", b"[", b"null")):
        assert found == "oms-avro"  # the auto parser hands anything else to the DTS Avro reader
    else:
        assert found == detect_format(raw)
