"""The pause between retries after a broker error: doubling while the failures go on, back to the first after a success.

Without the reset, one outage left every later error of the service's life waiting
the longest pause (``BINLAKE_RETRY_BACKOFF_MAX_S``): a leader moving for a second,
days after, held the partitions for 30 s. A success is a committed batch, or a retry
that ran for as long as the longest pause before it failed: an idle normalizer commits
nothing, and its next error is then a new fault, not the same outage.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

FIRST_S = 0.5


@dataclass
class Backoff:
    max_s: float
    first_s: float = FIRST_S
    clock: Callable[[], float] = time.monotonic
    _next: float = field(init=False)
    _retried_at: float | None = field(default=None, init=False)
    """When the retry after the last pause began (None: no failure since the last success)."""

    def __post_init__(self) -> None:
        self._next = min(self.first_s, self.max_s)

    def failed(self) -> float:
        """The pause to wait now; the next failure's will be twice as long (up to ``max_s``)."""
        if self._retried_at is not None and self.clock() - self._retried_at >= self.max_s:
            self.succeeded()  # the retry held as long as the longest pause: this failure is a new one
        pause = self._next
        self._next = min(pause * 2, self.max_s)
        self._retried_at = self.clock() + pause
        return pause

    def succeeded(self) -> bool:
        """Back to the first pause; True if a failure had raised it (the service has recovered)."""
        recovered = self._retried_at is not None
        self._next = min(self.first_s, self.max_s)
        self._retried_at = None
        return recovered
