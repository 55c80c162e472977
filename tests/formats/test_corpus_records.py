"""Every golden case publishes exactly the Kafka records ``tests/corpus/records.sha256`` pins, lane or not.

``test_corpus.py`` compares the JSON view of each case's events; this compares the bytes the unified topic
receives (each event's record key and single-object Avro value), as a sha256 per case: the contract a
rewrite of the codec must keep (issue #47). The manifest is what the Python codec gives; where a format's
native lane reads a case (``codec_for`` with the lane on, as the normalizer runs), it must give the same.

After a deliberate change of records, rewrite the manifest with ``python -m tests.corpus_records --write``
(``python -m tests.corpus_records`` lists the cases that differ) and say in the commit why they changed.
"""

from __future__ import annotations

import pytest

from binlake.shared.normalize import codec_for
from binlake.shared.normalize.native_codec import FAILED, TAKEN
from binlake.shared.parsing.result import Rejected
from tests.corpus_cases import Case, cases
from tests.corpus_records import python_outcome, read
from tests.support.lane_support import NEEDS_LANE
from tests.support.record_digest import outcome_text

pytestmark = pytest.mark.unit

CASES = cases()
IDS = [case.id for case in CASES]
REGENERATE = "deliberate? python -m tests.corpus_records --write, and say why in the commit"


@pytest.fixture(scope="module")
def manifest() -> dict[str, str]:
    return read()


def test_the_manifest_lists_every_case_once(manifest: dict[str, str]) -> None:
    assert list(manifest) == IDS, REGENERATE


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_python_codec_publishes_the_pinned_records(case: Case, manifest: dict[str, str]) -> None:
    assert python_outcome(case) == manifest.get(case.id), REGENERATE


@NEEDS_LANE
@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_native_lane_publishes_the_same_records(case: Case, manifest: dict[str, str]) -> None:
    ctx = case.context()
    codec = codec_for(case.format_id, ctx)
    result = codec(case.raw(), ctx.topic, ctx.partition, ctx.offset)
    assert isinstance(result, Rejected) or result.lane != FAILED, "the lane crashed on a golden case"
    # Declined or without a lane, the Python codec answered: equal by construction, checked all the same.
    assert outcome_text(result) == manifest.get(case.id), f"lane {getattr(result, 'lane', None)}"


TAKES_NO_CASE = {"debezium-smt"}
"""Its corpus is schema-less rows, tombstones and rejects, which its lane declines (its one typed row has a
zoned time only the parser reads: tests/formats/debezium_smt/test_lane_debezium_smt.py)."""


@NEEDS_LANE
def test_the_lanes_take_golden_cases_of_every_format_with_a_lane() -> None:
    """The test above is no vacuous pass: each format's lane takes some of its cases."""
    taken: dict[str, int] = {}
    for case in CASES:
        ctx = case.context()
        codec = codec_for(case.format_id, ctx)
        if not codec.native:
            continue
        result = codec(case.raw(), ctx.topic, ctx.partition, ctx.offset)
        taken[case.format_id] = taken.get(case.format_id, 0) + int(
            not isinstance(result, Rejected) and result.lane == TAKEN
        )
    assert taken and {format_id for format_id, count in taken.items() if not count} <= TAKES_NO_CASE, taken
