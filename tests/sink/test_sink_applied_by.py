"""``current_state.applied_by``: which changelog versions a mirror batch applied in full, from its offset log."""

from __future__ import annotations

import pytest

from binlake.spark_sink.mirror import current_state

pytestmark = pytest.mark.unit


def test_applied_by_reads_the_delta_source_offset() -> None:
    meta = '{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}'

    def offsets(offset: str) -> str:
        return f"v1\n{meta}\n{offset}"

    at = '{"sourceVersion":1,"reservoirId":"x","reservoirVersion":7,"index":3,"isStartingVersion":false}'
    assert current_state.applied_by(offsets(at)) == 6  # version 7 may be partly read
    starting = '{"sourceVersion":1,"reservoirId":"x","reservoirVersion":7,"index":3,"isStartingVersion":true}'
    assert current_state.applied_by(offsets(starting)) == -1  # inside the initial snapshot
    assert current_state.applied_by(None) == -1
    assert current_state.applied_by("v2\n{}\n{}") == -1
    assert current_state.applied_by(offsets("not json")) == -1
