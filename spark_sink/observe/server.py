"""``/metrics``, ``/healthz`` and ``/readyz`` for the Spark sink, served from a background thread.

The normalizer serves them from its asyncio loop (``shared.metrics.http.HealthServer``).
The sink's main thread belongs to Spark (``awaitTermination``), so the same
server runs here on an asyncio loop of its own, in a daemon thread. ``ready``
is true while the streaming query runs; ``beat()`` is called by the command's
wait loop (once a second while the query is alive), so ``/healthz`` turns 503
only when the driver stops responding.
"""

from __future__ import annotations

import asyncio
import threading

from prometheus_client import CollectorRegistry

from binlake.shared.metrics.http import HealthServer


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, *, stale_after_s: float = 60.0) -> None:
        self.health = HealthServer(registry, stale_after_s=stale_after_s)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.health.port

    @property
    def ready(self) -> bool:
        return self.health.ready

    @ready.setter
    def ready(self, value: bool) -> None:
        self.health.ready = value

    def beat(self) -> None:
        self.health.beat()

    def start(self, host: str, port: int) -> int:
        """Bind ``host:port`` (0: a free port) and serve in the background; return the bound port."""
        loop = asyncio.new_event_loop()
        bound: list[int] = []
        failed: list[BaseException] = []
        started = threading.Event()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self.health.start(host, port))
                bound.append(self.health.port)
            except (OSError, RuntimeError) as exc:
                failed.append(exc)
            finally:
                started.set()
            if not failed:
                loop.run_forever()
            loop.run_until_complete(self.health.stop())
            loop.close()

        self._loop = loop
        self._thread = threading.Thread(target=serve, name="binlake-sink-metrics", daemon=True)
        self._thread.start()
        started.wait()
        if failed:
            self._thread.join()
            raise OSError(
                f"the sink's metrics server cannot listen on {host}:{port} ({failed[0]}): "
                "set BINLAKE_SINK_METRICS_PORT to a free port (0 picks one)"
            )
        return bound[0]

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        if thread.is_alive():
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
        self._loop = self._thread = None
