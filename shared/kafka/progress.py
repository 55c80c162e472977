"""Whether each input partition makes progress: the clock behind ``binlake_partition_stalled``.

A partition *waits* from the moment input of it is fetched that no committed batch
covers yet, until a batch commits. A healthy partition waits for the length of one
batch; one whose batches keep failing (a broker outage, a record Kafka refuses, a
fenced producer) waits on, and past ``BINLAKE_STALL_THRESHOLD_S`` it is *stalled*:
``/readyz`` fails and the metric says which partition. An idle partition (nothing to
fetch) does not wait.

The clocks outlive the Kafka clients: the run loop closes every client when it backs
off and rejoins, and a partition stuck across such restarts must stay stalled. A
partition's clock is dropped when an assignment gives it to another instance.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from aiokafka import TopicPartition


class Progress:
    def __init__(self, stall_after_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.stall_after_s = stall_after_s
        self._clock = clock
        self._waiting_since: dict[TopicPartition, float] = {}

    def waiting(self, tp: TopicPartition) -> None:
        """Input of ``tp`` was fetched that no committed batch covers yet (the clock runs from the first)."""
        if tp not in self._waiting_since:
            self._waiting_since[tp] = self._clock()

    def committed(self, tp: TopicPartition) -> None:
        """A batch of ``tp`` committed: what it waited for is done."""
        self._waiting_since.pop(tp, None)

    def assigned(self, tps: Iterable[TopicPartition]) -> None:
        """Only ``tps`` are this instance's now: the other partitions' clocks are their new owners' business."""
        keep = set(tps)
        for tp in [tp for tp in self._waiting_since if tp not in keep]:
            del self._waiting_since[tp]

    def waits(self) -> dict[TopicPartition, float]:
        """Seconds each waiting partition has waited."""
        now = self._clock()
        return {tp: now - since for tp, since in self._waiting_since.items()}

    def stalled(self) -> list[TopicPartition]:
        """Partitions that have waited longer than the threshold."""
        return sorted(tp for tp, waited in self.waits().items() if waited > self.stall_after_s)
