"""Why the native codec left a message to the parser (``Normalized.decline``, the
``binlake_fast_lane_declines`` metric): ``control`` for a message without a change, else the part of
the message where the lane stopped (``src/decline.rs``)."""

from __future__ import annotations

import pytest

from binlake.shared.kafka.tally import Tally
from binlake.shared.metrics.normalizer import NormalizerMetrics
from binlake.shared.normalize import Normalized, codec_for
from binlake.shared.normalize.native_codec import CONTROL, DECLINED, TAKEN
from binlake.shared.parsing.context import ParseContext
from tests.corpus_cases import cases
from tests.support.lane_support import NEEDS_LANE

pytestmark = [pytest.mark.unit, NEEDS_LANE]


def _canal(**fields: str) -> bytes:
    """A Canal-profile INSERT of shop.orders, with some members' JSON text replaced."""
    members = {
        "data": '[{"id":"1","v":"a"}]',
        "database": '"shop"',
        "table": '"orders"',
        "pkNames": '["id"]',
        "isDdl": "false",
        "type": '"INSERT"',
        "es": "1700000000000",
        "ts": "1700000000001",
        "id": "7",
        "sqlType": '{"id":-5,"v":12}',
        "mysqlType": '{"id":"bigint","v":"varchar(8)"}',
        "old": "null",
    }
    members.update(fields)
    return ("{" + ",".join(f'"{name}":{text}' for name, text in members.items() if text) + "}").encode()


def _stages() -> set[str]:
    from binlake.shared.kernel import _kernel

    return set(_kernel.DECLINE_STAGES)


@pytest.mark.parametrize(
    ("fields", "reason"),
    [
        ({}, None),  # taken
        ({"mysqlType": ""}, "types"),  # sqlType only (JDBC codes): the parser's reading
        ({"data": '[{"id":"1","v":"a","w":"b"}]'}, "values"),  # a column no type declares: inferred by Python
        ({"data": '[{"id":"1","v":7}]'}, "values"),  # a number where Canal writes strings
        ({"id": ""}, "envelope"),  # no id: read with the OMS profile's conventions
        # DDL: an event of its own (op DDL) that the lane does not write
        ({"isDdl": "true", "type": '"ALTER"', "data": "null", "sql": '"ALTER TABLE orders ADD w INT"'}, "operation"),
    ],
)
def test_canal_declines_name_where_the_lane_stopped(fields: dict[str, str], reason: str | None) -> None:
    codec = codec_for("canal-json", ParseContext())
    assert codec.native
    out = codec(_canal(**fields), "t", 0, 1)
    assert isinstance(out, Normalized), out
    assert out.decline == reason
    assert out.lane == (TAKEN if reason is None else DECLINED)


def test_every_corpus_decline_has_a_known_reason() -> None:
    """Over the golden corpus, each declined message the parser accepts names a reason; messages without a
    change are ``control``; a taken one names none."""
    reasons: set[str] = set()
    for case in cases():
        codec = codec_for(case.format_id, case.context())
        if not codec.native:
            continue
        out = codec(case.raw(), "corpus", 3, 41)
        if not isinstance(out, Normalized):
            continue
        if out.lane == DECLINED:
            assert out.decline in _stages() | {CONTROL}, case.id
            assert (out.decline == CONTROL) == (out.control is not None and not out.rows), case.id
            reasons.add(out.decline)
        else:
            assert out.decline is None, case.id
    # The corpus holds DDL and heartbeats, and changes each lane leaves to its parser.
    assert CONTROL in reasons and len(reasons) >= 4, reasons


def test_declines_are_published_by_reason() -> None:
    codec = codec_for("canal-json", ParseContext())
    tally = Tally()
    for raw in (_canal(mysqlType=""), _canal(mysqlType=""), _canal(), _canal(id="")):
        out = codec(raw, "t", 0, 1)
        assert isinstance(out, Normalized)
        tally.accepted(out)
    metrics = NormalizerMetrics()
    tally.publish(metrics, "t")
    value = metrics.registry.get_sample_value
    assert value("binlake_fast_lane_declines_total", {"reason": "types"}) == 2
    assert value("binlake_fast_lane_declines_total", {"reason": "envelope"}) == 1
    assert value("binlake_fast_lane_messages_total", {"result": "taken"}) == 1
