"""The sink's per-step wall-time clock: sums per name, across threads."""

from __future__ import annotations

import threading
import time

import pytest

from binlake.spark_sink.observe.steps import StepClock

pytestmark = pytest.mark.unit


def test_steps_sum_per_name_and_count_failed_steps() -> None:
    clock = StepClock()
    with clock.step("merge"):
        time.sleep(0.01)
    with clock.step("merge"):
        time.sleep(0.01)
    with pytest.raises(ValueError), clock.step("floors"):
        raise ValueError("a failed step still took its time")
    assert set(clock.seconds) == {"merge", "floors"}
    assert clock.seconds["merge"] >= 0.02
    assert clock.seconds["floors"] >= 0.0


def test_steps_from_several_threads_add_up() -> None:
    clock = StepClock()

    def work() -> None:
        for _ in range(50):
            with clock.step("merge"):
                time.sleep(0.001)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert clock.seconds["merge"] >= 4 * 50 * 0.001
