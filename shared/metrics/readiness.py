"""The normalizer's ``/healthz`` and ``/readyz``: what the consume loop waits on decides.

``/healthz`` (liveness) answers 200 while the loop works (shared/metrics/liveness.py):
it polled or left a broker wait within ``BINLAKE_LIVENESS_TIMEOUT_S``, or it is inside
a wait on the brokers now. A Kafka outage leaves it at 200 (a restart would not bring
the brokers back); a loop wedged on anything else answers 503, and the orchestrator
restarts it.

``/readyz`` answers 200 once the consumer has started, and 503 with every reason that
holds, one a line:

- ``starting``: the consumer has not started (or the loop backs off after a broker
  error) and it has not waited on the brokers for the timeout yet;
- ``waiting on the brokers since T``: the loop has waited on the brokers longer than
  the timeout without progress (T in UTC);
- ``stalled partitions: topic:partition,...``: an owned partition has waited longer
  than ``BINLAKE_STALL_THRESHOLD_S`` for a committed batch (shared/kafka/progress.py),
  a refused record or a broker down alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from binlake.shared.metrics.http import HealthServer
from binlake.shared.metrics.liveness import Liveness

OK = "200 OK"
UNAVAILABLE = "503 Service Unavailable"


class NormalizerHealth(HealthServer):
    def __init__(self, registry: CollectorRegistry, *, liveness: Liveness, stalled: Callable[[], list[str]]) -> None:
        super().__init__(registry, stale_after_s=liveness.timeout_s)
        self.liveness = liveness
        self.stalled = stalled
        """The stalled partitions, as ``topic:partition``."""

    def beat(self) -> None:
        self.liveness.progressed()

    def _route(self, path: str) -> tuple[str, str, bytes]:
        if path == "/healthz":
            return self._liveness()
        if path == "/readyz":
            return self._readiness()
        return super()._route(path)

    def _liveness(self) -> tuple[str, str, bytes]:
        liveness = self.liveness
        if not liveness.alive():
            idle = liveness.idle_s()
            return (
                UNAVAILABLE,
                "text/plain",
                f"stalled: no progress for {idle:.0f} s, not waiting on the brokers\n".encode(),
            )
        stuck = liveness.stuck_since()
        if stuck is None:
            return OK, "text/plain", b"ok\n"
        return OK, "text/plain", f"ok, waiting on the brokers since {utc(stuck)}\n".encode()

    def _readiness(self) -> tuple[str, str, bytes]:
        reasons: list[str] = []
        stuck = self.liveness.stuck_since()
        if stuck is not None:
            reasons.append(f"waiting on the brokers since {utc(stuck)}")
        elif not self.ready:
            reasons.append("starting")
        if self.ready:
            stalled = self.stalled()
            if stalled:
                reasons.append(f"stalled partitions: {','.join(stalled[:20])}")
        if reasons:
            return UNAVAILABLE, "text/plain", "".join(f"{reason}\n" for reason in reasons).encode()
        return OK, "text/plain", b"ready\n"


def utc(epoch_s: float) -> str:
    """``2025-01-31T12:00:00Z``: the time a reason names, in UTC like the logs."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch_s))
