"""A small asyncio HTTP server for ``/metrics``, ``/healthz`` and ``/readyz``.

No web framework: three fixed GET routes, one short response each. ``healthz``
answers 200 while the service loop is alive (it calls ``beat()`` on every poll
and while backing off from a broker outage); ``readyz`` answers 200 once the
consumer has started (a replica beyond the partition count is ready but idle).
"""

from __future__ import annotations

import asyncio
import time

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


class HealthServer:
    def __init__(self, registry: CollectorRegistry, *, stale_after_s: float = 60.0) -> None:
        self.registry = registry
        self.stale_after_s = stale_after_s
        self.ready = False
        self._last_beat = time.monotonic()
        self._server: asyncio.Server | None = None

    def beat(self) -> None:
        self._last_beat = time.monotonic()

    @property
    def port(self) -> int:
        assert self._server is not None and self._server.sockets
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def start(self, host: str, port: int) -> None:
        self._server = await asyncio.start_server(self._handle, host, port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await asyncio.wait_for(reader.readline(), 5)
            while (await asyncio.wait_for(reader.readline(), 5)).strip():
                pass  # headers are not needed
            parts = request.decode("latin-1").split()
            path = parts[1] if len(parts) > 1 else "/"
            status, content_type, body = self._route(path.split("?")[0])
            writer.write(
                f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                "Connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (TimeoutError, ConnectionError):
            pass
        finally:
            writer.close()

    def _route(self, path: str) -> tuple[str, str, bytes]:
        if path == "/metrics":
            return "200 OK", CONTENT_TYPE_LATEST, generate_latest(self.registry)
        if path == "/healthz":
            alive = time.monotonic() - self._last_beat < self.stale_after_s
            return ("200 OK" if alive else "503 Service Unavailable"), "text/plain", b"ok\n" if alive else b"stalled\n"
        if path == "/readyz":
            return (
                ("200 OK" if self.ready else "503 Service Unavailable"),
                "text/plain",
                b"ready\n" if self.ready else b"starting\n",
            )
        return "404 Not Found", "text/plain", b"not found\n"
