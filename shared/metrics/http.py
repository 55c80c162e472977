"""A small asyncio HTTP server for ``/metrics``, ``/healthz`` and ``/readyz``.

No web framework: three fixed GET routes, one short response each. ``healthz``
answers 200 while the service loop is alive (it calls ``beat()`` on every poll
and while backing off from a broker outage); ``readyz`` answers 200 once the
consumer has started (a replica beyond the partition count is ready but idle).
The normalizer answers both by what its loop waits on (shared/metrics/readiness.py).

Anyone who can reach the port can send it anything, so no request can break
it: a request has ``request_timeout_s`` to arrive whole (408 after), lines are
at most ``MAX_LINE`` bytes (400 for the request line, 431 for a header), at
most ``MAX_HEADERS`` headers (431), a request line that is not
``GET /path HTTP/x`` gets 400 (405 for another method), a connection closed
before its request ends is closed, a client that does not read its answer is
cut off after the same timeout, and beyond ``MAX_CONNECTIONS`` open ones a new
connection is closed at once. One connection's failure never reaches the others.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

MAX_LINE: Final = 8192
"""Longest request or header line, in bytes (the reader's buffer limit too)."""
MAX_HEADERS: Final = 100
MAX_CONNECTIONS: Final = 64
"""Connections served at once: Prometheus and the probes need a few; the cap bounds what idle ones can hold."""

log = logging.getLogger("binlake.http")


class HealthServer:
    def __init__(
        self, registry: CollectorRegistry, *, stale_after_s: float = 60.0, request_timeout_s: float = 10.0
    ) -> None:
        self.registry = registry
        self.stale_after_s = stale_after_s
        self.request_timeout_s = request_timeout_s
        self._connections = 0
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
        self._server = await asyncio.start_server(self._handle, host, port, limit=MAX_LINE)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._connections >= MAX_CONNECTIONS:
            writer.transport.abort()
            return
        self._connections += 1
        try:
            try:
                async with asyncio.timeout(self.request_timeout_s):
                    answer = await self._answer(reader)
            except TimeoutError:
                answer = _response("408 Request Timeout", "text/plain", b"request timeout\n")
            if answer is not None:
                writer.write(answer)
                async with asyncio.timeout(self.request_timeout_s):  # a client that never reads
                    await writer.drain()
        except (OSError, EOFError):  # the client reset, left, or never read its answer (TimeoutError)
            writer.transport.abort()
        except Exception:  # the boundary: a bug answering one client must not stop the server
            log.exception("metrics/health request failed")
            writer.transport.abort()
        finally:
            self._connections -= 1
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader) -> bytes | None:
        """The response to one request, or None where the client left before sending one."""
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            return _bad("incomplete request line") if exc.partial.strip() else None
        except asyncio.LimitOverrunError:
            return _bad("request line too long")
        parts = line.decode("latin-1").split()
        if len(parts) != 3 or not parts[1].startswith("/") or not parts[2].startswith("HTTP/"):
            return _bad("malformed request line")
        for _ in range(MAX_HEADERS + 1):
            try:
                header = await reader.readuntil(b"\n")
            except asyncio.IncompleteReadError:
                return _bad("incomplete request headers")
            except asyncio.LimitOverrunError:
                return _response("431 Request Header Fields Too Large", "text/plain", b"header line too long\n")
            if not header.strip():
                break  # headers are not needed
        else:
            return _response("431 Request Header Fields Too Large", "text/plain", b"too many headers\n")
        if parts[0] != "GET":
            return _response("405 Method Not Allowed", "text/plain", b"GET only\n", extra="Allow: GET\r\n")
        return _response(*self._route(parts[1].split("?")[0]))

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


def _response(status: str, content_type: str, body: bytes, *, extra: str = "") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n{extra}"
    return (head + "Connection: close\r\n\r\n").encode() + body


def _bad(why: str) -> bytes:
    return _response("400 Bad Request", "text/plain", why.encode() + b"\n")
