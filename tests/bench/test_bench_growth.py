"""The growth bench's pure helpers (``tests.bench.growth``): its messages, key copies and memory readings."""

from __future__ import annotations

import orjson
import pytest

from binlake.shared.normalize import Normalized, codec_for
from binlake.shared.parsing.context import ParseContext
from tests.bench import growth

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("width", [5, 50])
def test_wide_messages_have_their_width_and_the_codec_takes_them(width: int) -> None:
    codec = codec_for(growth.FORMAT, ParseContext(topic="t"))
    lines = growth.wide_lines(width, 40)
    assert any(orjson.loads(line)["type"] == "UPDATE" for line in lines)
    for offset, line in enumerate(lines):
        assert len(orjson.loads(line)["data"][0]) == width
        outcome = codec(line, "t", 0, offset)
        assert isinstance(outcome, Normalized), outcome
        assert outcome.records == 1


@pytest.mark.parametrize("compressible", [False, True])
def test_sized_messages_carry_a_value_of_the_size_asked(compressible: bool) -> None:
    lines = growth.sized_lines(1000, 5, compressible=compressible)
    bodies = [orjson.loads(line)["data"][0]["body"] for line in lines]
    assert all(len(body) == 1000 and body.isascii() for body in bodies)
    assert (len(set(bodies)) == 1) is compressible  # random text differs per message
    codec = codec_for(growth.FORMAT, ParseContext(topic="t"))
    assert all(isinstance(codec(line, "t", 0, n), Normalized) for n, line in enumerate(lines))


def test_clone_keys_never_meet_and_copy_zero_is_the_key() -> None:
    keys = [1, 2, 9_999, 2**64 - 5, 2**64 - 9_995]
    copies = [growth.clone_key(key, copy) for key in keys for copy in range(100)]
    assert len(set(copies)) == len(copies)
    assert [growth.clone_key(key, 0) for key in keys] == keys
    assert all(0 < key < 2**64 for key in copies)
    assert growth.clone_key(3, 2) == 3 + 2 * growth.CLONE_STRIDE
    assert growth.clone_key(2**64 - 5, 2) == 2**64 - 5 - 2 * growth.CLONE_STRIDE


def test_rekeyed_changes_keep_their_values_under_the_new_key() -> None:
    inserts, updates = growth.lake_changes(20, 30, seed=3)
    assert {c.op for c in inserts} == {"INSERT"} and {c.op for c in updates} == {"UPDATE"}
    assert {c.key for c in updates} <= {c.key for c in inserts}
    moved = growth.rekeyed(updates[0], 12345)
    assert moved.key == 12345 and moved.before is not None and moved.after is not None
    assert moved.before["id"] == moved.after["id"] == 12345
    assert {k: v for k, v in moved.after.items() if k != "id"} == {
        k: v for k, v in (updates[0].after or {}).items() if k != "id"
    }


def test_status_kib_reads_the_peak_and_the_resident_set() -> None:
    status = "Name:\tjava\nVmPeak:\t 9000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t40\n"
    assert growth.status_kib(status) == (204_800, 102_400)
    assert growth.status_kib("Name:\tkthreadd\nThreads:\t1\n") == (0, 0)


def test_relative_is_each_case_over_the_first() -> None:
    cases = {"5": {"eps": 1000}, "50": {"eps": 250}, "500": {"eps": 10}}
    assert growth._relative(cases, "eps") == {"5": 1.0, "50": 0.25, "500": 0.01}


def test_memory_summary_leaves_out_short_lived_children_and_keeps_each_phase_apart() -> None:
    python, java = (1, "binlake", 100 * 1024, 90 * 1024), (2, "java", 2000 * 1024, 1500 * 1024)
    fork = (3, "Executor task l", 1900 * 1024, 1900 * 1024)  # a JVM fork before its exec: one sample only
    samples = [
        (None, [python, java]),
        ("1000", [python, (2, "java", 2100 * 1024, 1600 * 1024), fork]),
        ("1000", [python, java]),
        (None, [python, java]),
        ("10000", [(1, "binlake", 120 * 1024, 110 * 1024), (2, "java", 3000 * 1024, 2800 * 1024)]),
    ]
    low = growth.memory_summary(samples, "1000", min_samples=2)
    assert low["peak_hwm_mib"] == 100 + 2100
    assert (low["rss_max_mib"], low["samples"]) == (90 + 1600, 2)
    assert low["processes"] == [{"name": "binlake", "hwm_mib": 100}, {"name": "java", "hwm_mib": 2100}]
    assert low["left_out"] == 1
    high = growth.memory_summary(samples, "10000", min_samples=2)
    assert (high["peak_hwm_mib"], high["rss_max_mib"], high["rss_median_mib"]) == (120 + 3000, 2910, 2910)
    assert growth.memory_summary(samples, "missing")["rss_max_mib"] is None
    assert growth.memory_summary(samples, "1000", min_samples=6)["peak_hwm_mib"] == 0  # nothing lived that long
