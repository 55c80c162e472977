"""``source.batch_starts``: where a changelog micro-batch starts, from the query's previous progress report.

Only the report of the batch just before may say (its Kafka end offsets are
this batch's first offsets); anything else (no report, another batch's, a
source without Kafka offsets) answers None, and the batch then measures its
offsets with a job.
"""

from __future__ import annotations

import json

import pytest

from spark_sink.source import batch_starts

pytestmark = pytest.mark.unit

END = {"unified": {"0": 120, "1": 0, "3": 7}}


def _progress(batch_id: int, end: object) -> dict[str, object]:
    return {"batchId": batch_id, "sources": [{"description": "KafkaV2[Subscribe[unified]]", "endOffset": end}]}


def test_the_previous_batch_end_offsets_are_the_first_offsets() -> None:
    expected = {("unified", 0): 120, ("unified", 1): 0, ("unified", 3): 7}
    assert batch_starts(_progress(4, END), 5) == expected
    assert batch_starts(_progress(4, json.dumps(END)), 5) == expected  # an offset as JSON text


@pytest.mark.parametrize(
    ("progress", "batch_id"),
    [
        (None, 0),  # the query's first report is not in yet
        (_progress(4, END), 4),  # the batch's own (a retry) or an older report
        (_progress(3, END), 5),
        (_progress(4, None), 5),
        (_progress(4, "not json"), 5),
        (_progress(4, {}), 5),
        (_progress(4, {"unified": 12}), 5),
        ({"batchId": 4, "sources": []}, 5),
        ({"batchId": 4, "sources": [{"endOffset": END}, {"endOffset": END}]}, 5),
    ],
)
def test_anything_else_is_not_known(progress: dict[str, object] | None, batch_id: int) -> None:
    assert batch_starts(progress, batch_id) is None
