"""The cost part's arithmetic (``sink_cost``): pure functions, no broker or Spark."""

from __future__ import annotations

import pytest

from tests.bench import sink_cost

pytestmark = pytest.mark.unit


def test_line_through_the_last_two_rounds() -> None:
    # 50 core-s for 150,000 events, 113 for 600,000: 0.14 ms per event on top of 29 core-s per batch.
    found = sink_cost.line_through([(150_000, 99.0), (150_000, 50.0), (600_000, 113.0)])
    assert found == {"fixed_core_s": 29.0, "per_event_ms": 0.14}


def test_equal_rounds_give_no_line() -> None:
    assert sink_cost.line_through([(1, 2.0), (1, 3.0)]) == {"fixed_core_s": None, "per_event_ms": None}


def test_rounds_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BINLAKE_BENCH_SINK_COST_ROUNDS", raising=False)
    assert sink_cost.rounds_from_env() == sink_cost.DEFAULT_ROUNDS
    monkeypatch.setenv("BINLAKE_BENCH_SINK_COST_ROUNDS", "1000,2000")
    assert sink_cost.rounds_from_env() == (1000, 2000)
