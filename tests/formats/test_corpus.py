"""Every golden case in tests/corpus parses to exactly its expected output."""

from __future__ import annotations

import pytest

from binlake.shared.parsing.result import Rejected
from tests.corpus_cases import Case, cases, rendered

CASES = cases()


@pytest.mark.unit
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden_case(case: Case) -> None:
    outcome = case.run()
    reject = case.expected_reject()
    if reject is not None:
        assert isinstance(outcome, Rejected), f"expected a reject, got {outcome}"
        assert outcome.code == reject["code"], outcome.reason
        assert reject.get("reason_contains", "") in outcome.reason
        return
    assert not isinstance(outcome, Rejected), f"rejected: {outcome.code}: {outcome.reason}"
    assert rendered(outcome) == case.expected_events()


@pytest.mark.unit
def test_every_format_has_cases() -> None:
    from binlake.shared.parsing import registry

    covered = {case.format_id for case in CASES}
    missing = sorted(set(registry.format_ids()) - covered)
    assert not missing, f"formats without golden cases: {missing}"
