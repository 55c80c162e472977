"""Wall time per step of a micro-batch (``binlake_sink_batch_step_seconds``): where a slow batch spends it.

Steps nest freely and may run on several threads at once (tables are applied
concurrently), so each step's time is its own wall time, summed over tables;
the steps of one batch can add up to more than the batch took.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

Step = Callable[[str], AbstractContextManager[None]]
"""Times a named step of the batch (``StepClock.step``)."""


class StepClock:
    """Seconds per step name, summed over the step's runs in one micro-batch."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._lock = threading.Lock()

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - started
            with self._lock:
                self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
