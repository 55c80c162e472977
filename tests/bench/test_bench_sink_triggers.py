"""``sink_triggers``: the process CPU it reads from ``/proc``."""

from __future__ import annotations

import os
import time

import pytest

from tests.bench.sink_triggers import jvm_cpu_s

pytestmark = pytest.mark.unit


def test_cpu_of_a_process_counts_what_it_spends() -> None:
    before = jvm_cpu_s(os.getpid())
    until = time.process_time() + 0.3
    while time.process_time() < until:
        pass
    spent = jvm_cpu_s(os.getpid()) - before
    assert 0.2 <= spent < 5
