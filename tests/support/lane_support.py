"""What the fast-lane tests share: when they run, and what the Python path publishes for a message."""

from __future__ import annotations

import os

import pytest

from binlake.shared.kernel import Taken, available, lane_for
from binlake.shared.normalize import PythonCodec
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Rejected
from tests.corpus_cases import cases

NEEDS_LANE = pytest.mark.skipif(
    not available() and not (os.environ.get("CI") == "true" and os.environ.get("BINLAKE_COMPILE") != "0"),
    reason="the fast lane is not built (no Rust toolchain, or BINLAKE_COMPILE=0)",
)
"""Skip without the extension, except in CI's compiled build, where its absence must fail."""


def python_records(format_id: str, raw: bytes, ctx: ParseContext, topic: str, offset: int) -> Taken | None:
    """What the Python codec (the runtime's route without a lane) publishes for ``raw``, in a lane's shape
    (None: a reject, or no records)."""
    normalized = PythonCodec(format_id, ctx)(raw, topic, 3, offset)
    if isinstance(normalized, Rejected) or not normalized.rows:
        return None
    assert len(normalized.rows) == 1, "one message: one table, op and event time"
    return normalized.rows[0]


def corpus_agreement(format_id: str, topic: str) -> tuple[int, int]:
    """Run the lane over the golden corpus of ``format_id``, asserting it agrees with Python on
    every message it takes; return (cases the lane ran on, messages it took).

    A case whose options the lane does not handle gets no lane and is not counted.
    """
    seen = taken = 0
    for case in cases():
        if case.format_id != format_id:
            continue
        ctx = case.context().at(topic, 3, 0)
        lane = lane_for(format_id, ctx)
        if lane is None:
            continue
        seen += 1
        fast = lane.parse(case.raw(), topic, 3, 41)
        if fast is not None:
            assert fast == python_records(format_id, case.raw(), ctx, topic, 41), case.id
            taken += 1
    return seen, taken
