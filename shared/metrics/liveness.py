"""Whether the normalizer's consume loop works, and whether all it lacks is the brokers.

The loop *progresses* when it polls (``progressed``, once per poll). A batch in flight
polls no more until it commits or aborts, and in a Kafka outage that can take minutes:
aiokafka retries a transaction call (``send_offsets_to_transaction``, ``commit_transaction``,
a coordinator lookup) for as long as the broker is away. Time alone cannot tell such a
batch from a wedged loop, so the loop says what it waits on: every await on the brokers
(a send, an offset commit, a transaction or coordinator call, a producer started or
stopped, the back-off after a broker error) runs inside ``with liveness:``.

After ``timeout_s`` without progress:

- a loop inside a broker wait is *waiting on the brokers*: alive (a restart would not
  bring the brokers back; it would only rejoin and rebalance the group as they return),
  but not ready;
- any other loop is *wedged* (a deadlock on something that is not Kafka's): not alive,
  and the liveness probe restarts it. An event loop blocked by CPU work answers no probe
  at all, which the probe counts as a failure just the same.

Leaving a broker wait counts as activity too: a failed batch goes from its last wait to
the back-off's through a few synchronous steps (and an event-loop turn), and a probe
landing there must not see a loop that is neither polling nor waiting.

The wait is measured from the first broker wait after the last progress, across the
batch's calls and the back-off's reconnects, until the loop polls with no wait open (a
producer's start in the rebalance listener, under the lock the loop needs, keeps it
open): ``waited_s`` is ``binlake_broker_wait_seconds``, ``stuck_since`` the time
``/readyz`` names. The clocks are arguments so the rules are tested without waiting.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from types import TracebackType


class Liveness:
    __slots__ = ("_active", "_clock", "_open", "_since", "_since_wall", "_wall", "timeout_s")

    def __init__(
        self,
        timeout_s: float,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.timeout_s = timeout_s
        self._clock = clock
        self._wall = wall
        self._active = clock()
        """When the loop last polled or left a broker wait."""
        self._open = 0
        """Broker waits open now (partitions' batches run side by side; the rebalance listener has its own)."""
        self._since: float | None = None
        self._since_wall = 0.0

    def progressed(self) -> None:
        """The loop polled: what it waited on the brokers for is over, unless a wait is still open."""
        self._active = self._clock()
        if not self._open:
            self._since = None

    def __enter__(self) -> None:
        if self._since is None:
            self._since = self._clock()
            self._since_wall = self._wall()
        self._open += 1

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self._open -= 1
        self._active = self._clock()

    def alive(self) -> bool:
        """Inside a broker wait, or active within ``timeout_s``."""
        return self._open > 0 or self._clock() - self._active < self.timeout_s

    def idle_s(self) -> float:
        """Seconds since the loop last polled or left a broker wait."""
        return self._clock() - self._active

    def waited_s(self) -> float:
        """Seconds the loop has waited on the brokers without progress (0: not waiting)."""
        return 0.0 if self._since is None else self._clock() - self._since

    def stuck_since(self) -> float | None:
        """When (epoch seconds) a wait on the brokers began that has lasted ``timeout_s``; None if none has."""
        if self._since is None or self._clock() - self._since < self.timeout_s:
            return None
        return self._since_wall
