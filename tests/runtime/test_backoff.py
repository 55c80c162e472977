"""The pause after a broker error doubles while failures go on and starts again from the first after a success."""

from __future__ import annotations

import pytest

from binlake.shared.kafka.backoff import Backoff

pytestmark = pytest.mark.unit


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_pause_doubles_up_to_its_longest() -> None:
    backoff = Backoff(max_s=5.0, clock=_Clock())
    assert [backoff.failed() for _ in range(6)] == [0.5, 1.0, 2.0, 4.0, 5.0, 5.0]


def test_a_success_starts_the_pauses_again_from_the_first() -> None:
    # Before, one outage left every later error of the service's life waiting the longest pause.
    backoff = Backoff(max_s=30.0, clock=_Clock())
    for _ in range(8):
        backoff.failed()
    assert backoff.succeeded() is True  # it had been raised: the service recovered
    assert backoff.failed() == 0.5
    assert backoff.succeeded() is True
    assert backoff.succeeded() is False  # nothing to recover from: commits in a healthy run say nothing


def test_a_retry_that_held_as_long_as_the_longest_pause_counts_as_a_recovery() -> None:
    """An idle normalizer commits nothing: its next error, long after, is a new fault, not the same outage."""
    clock = _Clock()
    backoff = Backoff(max_s=8.0, clock=clock)
    assert [backoff.failed() for _ in range(3)] == [0.5, 1.0, 2.0]
    clock.now += 2.0 + 7.9  # the pause, then a retry shorter than the longest pause
    assert backoff.failed() == 4.0
    clock.now += 4.0 + 8.0  # the pause, then a retry that held for the longest pause
    assert backoff.failed() == 0.5


def test_the_first_pause_never_exceeds_the_longest() -> None:
    backoff = Backoff(max_s=0.2, clock=_Clock())
    assert [backoff.failed() for _ in range(3)] == [0.2, 0.2, 0.2]
