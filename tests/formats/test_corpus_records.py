"""Every golden case publishes exactly the Kafka records ``tests/corpus/records.sha256`` pins.

``test_corpus.py`` compares the JSON view of each case's events; this compares the bytes the unified topic
receives (each event's record key and single-object Avro value), as a sha256 per case: the contract a
rewrite of the codec must keep (issue #47).

After a deliberate change of records, rewrite the manifest with ``python -m tests.corpus_records --write``
(``python -m tests.corpus_records`` lists the cases that differ) and say in the commit why they changed.
"""

from __future__ import annotations

import pytest

from tests.corpus_cases import Case, cases
from tests.corpus_records import python_outcome, read

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
