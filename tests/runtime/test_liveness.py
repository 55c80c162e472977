"""Liveness and readiness by what the consume loop waits on: the rules, /healthz, /readyz and the gauge.

The clocks are fakes: a rule about "60 s without progress" is checked without waiting 60 s.
"""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from binlake.shared.metrics.liveness import Liveness
from binlake.shared.metrics.normalizer import NormalizerMetrics
from binlake.shared.metrics.readiness import NormalizerHealth, utc
from tests.support.service_process import probe

pytestmark = pytest.mark.unit

TIMEOUT_S = 60.0
EPOCH = 1_767_225_600.0
"""2026-01-01T00:00:00Z: the wall clock when the fake monotonic clock reads 0."""


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def wall(self) -> float:
        return EPOCH + self.now


def _liveness() -> tuple[Liveness, _Clock]:
    clock = _Clock()
    return Liveness(TIMEOUT_S, clock, clock.wall), clock


def test_a_loop_that_neither_polls_nor_waits_on_the_brokers_is_wedged() -> None:
    liveness, clock = _liveness()
    clock.now = 59.0
    assert liveness.alive()
    clock.now = 61.0
    assert not liveness.alive()
    assert liveness.idle_s() == 61.0
    liveness.progressed()
    assert liveness.alive()
    assert liveness.stuck_since() is None
    assert liveness.waited_s() == 0.0


def test_a_loop_waiting_on_the_brokers_stays_alive_and_says_since_when() -> None:
    liveness, clock = _liveness()
    clock.now = 10.0
    with liveness:
        clock.now = 69.0
        assert liveness.stuck_since() is None  # a wait shorter than the timeout is a batch like any other
        clock.now = 600.0
        assert liveness.alive()
        assert liveness.stuck_since() == EPOCH + 10.0
        assert liveness.waited_s() == 590.0


def test_a_loop_wedged_after_its_wait_fails_once_the_timeout_has_passed() -> None:
    liveness, clock = _liveness()
    with liveness:
        clock.now = 300.0
    clock.now = 300.0 + TIMEOUT_S - 1
    assert liveness.alive()  # leaving the wait was activity: the loop moved on
    clock.now = 300.0 + TIMEOUT_S + 1
    assert not liveness.alive()


def test_the_wait_spans_the_gaps_between_broker_calls_until_the_loop_polls() -> None:
    liveness, clock = _liveness()
    clock.now = 5.0
    with liveness:  # a batch's commit fails...
        clock.now = 40.0
    clock.now = 41.0
    with liveness:  # ...the back-off, the reconnect
        clock.now = 100.0
    assert liveness.stuck_since() == EPOCH + 5.0
    assert liveness.waited_s() == 95.0
    liveness.progressed()
    assert liveness.stuck_since() is None
    assert liveness.waited_s() == 0.0


def test_a_poll_does_not_end_a_wait_still_open_elsewhere() -> None:
    """The rebalance listener starts producers in the consumer's task, under the lock the loop needs:
    the loop polls meanwhile, and the partitions wait on the transaction coordinator all the same."""
    liveness, clock = _liveness()
    liveness.__enter__()  # the listener's wait, open across the loop's polls
    clock.now = 100.0
    liveness.progressed()
    assert liveness.stuck_since() == EPOCH
    liveness.__exit__(None, None, None)
    liveness.progressed()
    assert liveness.stuck_since() is None


def test_side_by_side_waits_and_failures_keep_the_count() -> None:
    liveness, clock = _liveness()
    with liveness:
        with pytest.raises(TimeoutError), liveness:  # one partition's batch fails...
            raise TimeoutError
        clock.now = 200.0
        assert liveness.alive()  # ...while another still waits
    clock.now = 200.0 + TIMEOUT_S + 1
    assert not liveness.alive()


@pytest.mark.asyncio
async def test_probes_during_a_broker_outage_and_a_wedge() -> None:
    liveness, clock = _liveness()
    stalled: list[str] = []
    metrics = NormalizerMetrics()
    metrics.broker_wait.set_function(liveness.waited_s)
    health = NormalizerHealth(metrics.registry, liveness=liveness, stalled=lambda: stalled)
    await health.start("127.0.0.1", 0)
    port = health.port
    try:
        assert await probe(port, "/readyz") == (503, "starting\n")
        health.ready = True
        assert await probe(port, "/healthz") == (200, "ok\n")
        assert await probe(port, "/readyz") == (200, "ready\n")

        since = utc(EPOCH + 1)
        assert since == "2026-01-01T00:00:01Z"
        clock.now = 1.0
        with liveness:  # a batch's commit waits on a broker that is away
            clock.now = 1.0 + TIMEOUT_S + 30
            stalled.append("in:0")
            assert await probe(port, "/healthz") == (200, f"ok, waiting on the brokers since {since}\n")
            assert await probe(port, "/readyz") == (
                503,
                f"waiting on the brokers since {since}\nstalled partitions: in:0\n",
            )
            scraped = generate_latest(metrics.registry).decode()
            assert f"binlake_broker_wait_seconds {TIMEOUT_S + 30}" in scraped
            health.ready = False  # the back-off after the failed batch
            assert await probe(port, "/readyz") == (503, f"waiting on the brokers since {since}\n")

        liveness.progressed()  # the brokers are back: the loop polls, the partition commits
        stalled.clear()
        health.ready = True
        assert await probe(port, "/healthz") == (200, "ok\n")
        assert await probe(port, "/readyz") == (200, "ready\n")
        assert "binlake_broker_wait_seconds 0.0" in generate_latest(metrics.registry).decode()

        clock.now += TIMEOUT_S + 15  # no poll, no broker wait: wedged
        assert await probe(port, "/healthz") == (503, "stalled: no progress for 75 s, not waiting on the brokers\n")
    finally:
        await health.stop()
