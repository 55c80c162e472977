"""The StreamingQueryListener that feeds the query-level metrics (``metrics``) from Spark's listener bus.

Spark posts a ``QueryProgressEvent`` after every micro-batch; pyspark delivers it to this Python listener
through the py4j callback server, asynchronously: the event of a batch arrives after the batch ends, and
``onQueryTerminated`` after every progress event of the run.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid

from pyspark.sql.streaming.listener import (
    QueryIdleEvent,
    QueryProgressEvent,
    QueryStartedEvent,
    QueryTerminatedEvent,
    StreamingQueryListener,
)

from binlake.spark_sink.observe.metrics import QUERY_NAME, SinkMetrics

log = logging.getLogger("binlake.sink.metrics")


class SinkListener(StreamingQueryListener):
    """Feeds ``SinkMetrics`` from the sink query's events (other queries of the session are ignored).

    ``wait_terminated(run_id)`` blocks until the termination event of a run has
    been delivered; events arrive in order, so by then every progress event of
    that run has been observed too.
    """

    def __init__(self, metrics: SinkMetrics, *, query_name: str = QUERY_NAME) -> None:
        self.metrics = metrics
        self.query_name = query_name
        self.last_event_at = time.monotonic()
        self._runs: set[uuid.UUID] = set()
        self._terminated: dict[uuid.UUID, threading.Event] = {}
        self._lock = threading.Lock()

    def _terminated_event(self, run_id: uuid.UUID) -> threading.Event:
        with self._lock:
            return self._terminated.setdefault(run_id, threading.Event())

    def onQueryStarted(self, event: QueryStartedEvent) -> None:
        self.last_event_at = time.monotonic()
        if event.name == self.query_name:
            with self._lock:
                self._runs.add(event.runId)
            self.metrics.query_active.set(1)

    def onQueryProgress(self, event: QueryProgressEvent) -> None:
        self.last_event_at = time.monotonic()
        progress = event.progress
        if progress.name != self.query_name:
            return
        try:
            self.metrics.observe_progress(progress)
        except Exception:  # a metrics bug must not surface in Spark's listener bus (logged)
            log.exception("could not record the progress of batch %s", progress.batchId)

    def onQueryIdle(self, event: QueryIdleEvent) -> None:
        self.last_event_at = time.monotonic()

    def onQueryTerminated(self, event: QueryTerminatedEvent) -> None:
        self.last_event_at = time.monotonic()
        with self._lock:
            ours = event.runId in self._runs
            self._runs.discard(event.runId)
            active = bool(self._runs)
        if ours:
            self.metrics.query_active.set(1 if active else 0)
            self._terminated_event(event.runId).set()

    def wait_terminated(self, run_id: uuid.UUID | str, timeout_s: float) -> bool:
        """True once the termination of run ``run_id`` has been delivered (False after ``timeout_s``)."""
        key = run_id if isinstance(run_id, uuid.UUID) else uuid.UUID(run_id)
        return self._terminated_event(key).wait(timeout_s)
