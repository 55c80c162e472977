"""``auto`` detects each golden message's format and gives that parser's events."""

from __future__ import annotations

import json

import pytest

from binlake.services.auto.parser import detect
from binlake.shared.parsing import registry
from binlake.shared.parsing.result import Parsed
from tests.corpus_cases import Case, cases

pytestmark = pytest.mark.unit

# Formats auto cannot tell apart from another one (documented in services/auto/parser.py):
# DRS JSON-C renders values differently from Canal but has the same fields; drs-avro
# needs its schema; a CKafka DDL *is* a Canal flat message; a DRS JSON message is
# Canal-shaped unless it carries DRS-only fields, a DELETE row in `old`, or `id` and unsized types.
UNDETECTABLE = {"drs-json-c", "drs-avro", "auto"}
CANAL_SHAPED = {"ckafka-v1", "drs-json"}


def _accepted(case: Case) -> bool:
    return case.expected_reject() is None and bool(case.expected_events())


ACCEPTED = [c for c in cases() if c.format_id not in UNDETECTABLE and _accepted(c)]


@pytest.mark.parametrize("case", ACCEPTED, ids=[c.id for c in ACCEPTED])
def test_auto_matches_explicit_format(case: Case) -> None:
    raw = case.raw()
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
        detected = "oms-avro"  # not JSON: auto tries the DTS Avro record
    else:
        row = doc.get("payload", doc) if isinstance(doc, dict) else doc
        if case.format_id == "debezium-smt" and not any(str(key).startswith("__") for key in row):
            # A bare row: nothing says which vendor wrote it. Auto must not guess it into events.
            assert not isinstance(registry.get("auto")(raw, case.context()), Parsed)
            return
        detected = detect(doc)
    if detected != case.format_id:
        assert case.format_id in CANAL_SHAPED and detected == "canal-json", (detected, case.id)
        return
    outcome = registry.get("auto")(raw, case.context())
    explicit = case.run()
    assert isinstance(outcome, Parsed) and isinstance(explicit, Parsed)
    assert outcome.events == explicit.events
    assert outcome.control == explicit.control


def test_auto_rejects_unknown_shapes() -> None:
    parser = registry.get("auto")
    ctx = cases()[0].context()
    for raw, code in [(b'{"hello": 1}', "wrong_format"), (b"[1]", "wrong_format"), (b"\x00\x01garbage", "malformed")]:
        outcome = parser(raw, ctx)
        assert not isinstance(outcome, Parsed)
        assert outcome.code == code, outcome


def test_generated_drs_json_is_read_as_drs_json_not_canal() -> None:
    """DRS JSON and Canal share their fields; DRS's unsized ``mysqlType`` tells them apart. Read as Canal,
    a DRS byte list (``[-59, 34]``) would become the bytes of that text."""
    from binlake.shared.cli.generate import messages
    from binlake.shared.generate.workload import Workload
    from binlake.shared.parsing.context import ParseContext, zone

    ctx = ParseContext(topic="t", partition=0, offset=0, source_timezone=zone("UTC"))
    auto, drs = registry.get("auto"), registry.get("drs-json")
    for _, raw in messages("drs-json", Workload(seed=7, tables=2), 50, "UTC"):
        outcome, explicit = auto(raw, ctx), drs(raw, ctx)
        assert isinstance(outcome, Parsed) and isinstance(explicit, Parsed)
        assert outcome.events == explicit.events
        assert all(event.source.format == "drs-json" for event in outcome.events)


def test_auto_takes_option_order_and_hands_it_to_maxwell_and_debezium() -> None:
    from binlake.shared.errors import ConfigError
    from binlake.shared.parsing.context import ParseContext

    spec = registry.spec("auto")
    for good in ({"order": "kafka"}, {"order": "position"}, {"order": "", "primary_key": "id"}):
        spec.check_options(good)
    with pytest.raises(ConfigError, match="bad option"):
        spec.check_options({"order": "binlog"})
    maxwell = b'{"database":"d","table":"t","type":"insert","ts":1,"position":"mysql-bin.000042:7","data":{"id":1}}'
    debezium = json.dumps(
        {
            "op": "c",
            "after": {"id": 1},
            "source": {"connector": "mysql", "db": "d", "table": "t", "file": "mysql-bin.000042", "pos": 7},
        }
    ).encode()
    kafka = f"{3:020d}.{9:020d}.000000"
    binlog = {maxwell: f"{42:020d}.{7 * 10**10:020d}.000000", debezium: f"{42:020d}.{7 * 10**6:020d}.000000"}
    for order, expected in (
        (None, {maxwell: kafka, debezium: binlog[debezium]}),  # each format's own default
        ("kafka", {maxwell: kafka, debezium: kafka}),
        ("position", binlog),
    ):
        ctx = ParseContext(topic="t", partition=3, offset=9, options={} if order is None else {"order": order})
        for raw, key in expected.items():
            outcome = registry.get("auto")(raw, ctx)
            assert isinstance(outcome, Parsed)
            assert [event.order_key for event in outcome.events] == [key], (order, raw)


def test_a_debezium_envelope_read_before_is_detected_from_its_payload_as_from_the_whole() -> None:
    """Once debezium-json has read an envelope's schema, auto decodes such a message's payload alone to
    detect it: the outcome is the full decode's, also for a payload that says debezium-smt (``__deleted``)
    or nests too deeply, and for the message after such a one."""
    from binlake.shared.cli.generate import messages
    from binlake.shared.generate.workload import Workload
    from binlake.shared.parsing.context import ParseContext, zone
    from binlake.shared.parsing.result import Rejected

    ctx = ParseContext(topic="t", partition=0, offset=0, source_timezone=zone("UTC"))
    auto, debezium, smt = registry.get("auto"), registry.get("debezium-json"), registry.get("debezium-smt")
    raws = [raw for _, raw in messages("debezium-json", Workload(seed=5, tables=2), 40, "UTC")]
    assert all(raw.startswith(b'{"schema":{') for raw in raws)
    for _ in range(2):  # the first pass remembers the schemas, the second takes the shortcut
        for raw in raws:
            outcome, explicit = auto(raw, ctx), debezium(raw, ctx)
            assert isinstance(outcome, Parsed) and isinstance(explicit, Parsed)
            assert outcome.events == explicit.events

    head, _, payload = raws[-1].partition(b',"payload":')
    deleted = head + b',"payload":' + payload[:-2] + b',"__deleted":"false"}}'
    assert detect(json.loads(deleted)) == "debezium-smt"
    outcome, explicit = auto(deleted, ctx), smt(deleted, ctx)
    if isinstance(outcome, Parsed) and isinstance(explicit, Parsed):
        assert outcome.events == explicit.events
    else:
        assert outcome == explicit

    deep = head + b',"payload":' + payload[:-2] + b',"x":' + b"[" * 600 + b"]" * 600 + b"}}"
    outcome = auto(deep, ctx)
    assert isinstance(outcome, Rejected) and outcome.code == "malformed", outcome
    assert "nests deeper than 512" in outcome.reason

    outcome, explicit = auto(raws[-1], ctx), debezium(raws[-1], ctx)
    assert isinstance(outcome, Parsed) and isinstance(explicit, Parsed)
    assert outcome.events == explicit.events
