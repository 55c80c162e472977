"""A signal during a dev broker's start raises ``Interrupted``; during a launch, only once the launch has ended."""

from __future__ import annotations

import signal

import pytest

from binlake.shared.devbroker.interrupts import Interrupted, deferred, interruptible

pytestmark = pytest.mark.unit


def test_a_signal_raises_interrupted_and_the_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Interrupted) as raised, interruptible():
        signal.raise_signal(signal.SIGTERM)
    assert raised.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_signal_during_a_launch_waits_for_its_end() -> None:
    # Raised between the fork and the moment the new process is recorded, it would lose a running broker.
    steps = []
    with pytest.raises(Interrupted), interruptible():
        with deferred():
            signal.raise_signal(signal.SIGINT)
            steps.append("recorded")
        steps.append("after the launch")
    assert steps == ["recorded"]


def test_a_second_signal_cannot_cut_the_cleanup_short() -> None:
    cleaned = False
    with pytest.raises(Interrupted), interruptible():
        try:
            signal.raise_signal(signal.SIGTERM)
        finally:
            signal.raise_signal(signal.SIGTERM)  # ignored while the first one unwinds
            cleaned = True
    assert cleaned
