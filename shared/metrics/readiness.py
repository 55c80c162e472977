"""The normalizer's ``/readyz``: not ready while an input partition is stalled.

``HealthServer`` answers ``/readyz`` 200 once the consumer has started. The
normalizer's answer is also 503 while a partition it owns has waited longer
than ``BINLAKE_STALL_THRESHOLD_S`` for a committed batch (shared/kafka/progress.py),
so a stuck instance shows in the orchestrator and in ``kube_pod_status_ready``
instead of passing as healthy. ``/healthz`` (liveness) is unchanged: a stalled
partition is not fixed by a restart as a rule (a refused record, a broker down).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry

from binlake.shared.metrics.http import HealthServer


class NormalizerHealth(HealthServer):
    def __init__(self, registry: CollectorRegistry, *, stalled: Callable[[], list[str]]) -> None:
        super().__init__(registry)
        self.stalled = stalled
        """The stalled partitions, as ``topic:partition``."""

    def _route(self, path: str) -> tuple[str, str, bytes]:
        if path == "/readyz" and self.ready:
            stalled = self.stalled()
            if stalled:
                names = ",".join(stalled[:20])
                return "503 Service Unavailable", "text/plain", f"stalled partitions: {names}\n".encode()
        return super()._route(path)
