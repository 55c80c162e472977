"""The metrics/health server over a real socket: malformed, huge, slow and abandoned requests.

Each bad client gets a 4xx answer or a closed connection, nothing escapes the
server's handler (the event loop's exception handler stays silent), and the
server goes on serving ``/metrics`` to the next client. The settings bind
127.0.0.1 unless told otherwise; the chart and docker-compose say 0.0.0.0.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterable
from typing import Any

import pytest
import pytest_asyncio
from prometheus_client import CollectorRegistry, Counter, Gauge
from prometheus_client.core import Metric
from prometheus_client.registry import Collector

from binlake.shared.metrics.http import MAX_CONNECTIONS, MAX_HEADERS, MAX_LINE, HealthServer

pytestmark = [pytest.mark.unit, pytest.mark.asyncio]

TIMEOUT_S = 1.0
"""The server's request timeout in these tests (10 s in service)."""


class _Server:
    def __init__(self, health: HealthServer, loop_errors: list[dict[str, Any]]) -> None:
        self.health = health
        self.loop_errors = loop_errors

    @property
    def port(self) -> int:
        return self.health.port


@pytest_asyncio.fixture
async def server() -> AsyncIterator[_Server]:
    registry = CollectorRegistry()
    Counter("binlake_probe_total", "a counter to find in /metrics", registry=registry).inc(3)
    health = HealthServer(registry, request_timeout_s=TIMEOUT_S)
    health.ready = True
    errors: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    await health.start("127.0.0.1", 0)
    try:
        yield _Server(health, errors)
    finally:
        await health.stop()
        loop.set_exception_handler(None)
    assert errors == [], f"an exception escaped the handler: {errors}"


async def _exchange(port: int, payload: bytes, *, eof: bool = False, timeout_s: float = 5.0) -> bytes | None:
    """Send ``payload`` (then half-close with ``eof``), read to the end; None if the server reset the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        try:
            writer.write(payload)
            await writer.drain()
            if eof:
                writer.write_eof()
        except (ConnectionResetError, BrokenPipeError):
            pass  # it answered and closed before reading everything: read what it said
        return await asyncio.wait_for(reader.read(), timeout_s)
    except ConnectionResetError:
        return None
    finally:
        writer.close()


def _status(response: bytes | None) -> int | None:
    if not response:
        return None  # closed without an answer
    return int(response.split(b" ", 2)[1])


async def _assert_serves_metrics(port: int) -> None:
    response = await _exchange(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    assert _status(response) == 200, response
    assert response is not None and b"binlake_probe_total 3.0" in response


@pytest.mark.parametrize(
    ("payload", "status"),
    [
        pytest.param(bytes(range(256)) * 4 + b"\r\n\r\n", 400, id="binary-junk"),
        pytest.param(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64 + b"\n\n", 400, id="tls-hello"),
        pytest.param(b"GET\r\n\r\n", 400, id="no-path"),
        pytest.param(b"GET metrics HTTP/1.1\r\n\r\n", 400, id="relative-path"),
        pytest.param(b"GET /metrics\r\n\r\n", 400, id="no-version"),
        pytest.param(b"\r\n\r\n", 400, id="empty-request-line"),
        pytest.param(b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405, id="post"),
        pytest.param(b"GET /nowhere HTTP/1.1\r\n\r\n", 404, id="unknown-path"),
    ],
)
async def test_malformed_request_lines(server: _Server, payload: bytes, status: int) -> None:
    assert _status(await _exchange(server.port, payload)) == status
    await _assert_serves_metrics(server.port)


async def test_a_100_kb_request_line(server: _Server) -> None:
    response = await _exchange(server.port, b"GET /" + b"a" * 100_000 + b" HTTP/1.1\r\n\r\n")
    assert _status(response) in (400, None)  # answered, or reset while the client was still sending
    await _assert_serves_metrics(server.port)


async def test_a_100_kb_line_without_end(server: _Server) -> None:
    response = await _exchange(server.port, b"x" * 100_000, eof=True)
    assert _status(response) in (400, None)
    await _assert_serves_metrics(server.port)


async def test_a_100_kb_header_line(server: _Server) -> None:
    response = await _exchange(server.port, b"GET /metrics HTTP/1.1\r\nCookie: " + b"c" * 100_000 + b"\r\n\r\n")
    assert _status(response) in (431, None)
    await _assert_serves_metrics(server.port)


async def test_a_header_line_at_the_limit_is_served(server: _Server) -> None:
    header = b"X-Pad: " + b"p" * (MAX_LINE - 16) + b"\r\n"
    assert _status(await _exchange(server.port, b"GET /healthz HTTP/1.1\r\n" + header + b"\r\n")) == 200


async def test_a_thousand_headers(server: _Server) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % n for n in range(1000))
    assert _status(await _exchange(server.port, b"GET /metrics HTTP/1.1\r\n" + headers + b"\r\n")) == 431
    await _assert_serves_metrics(server.port)


async def test_the_header_count_limit_is_exact(server: _Server) -> None:
    headers = b"".join(b"X-H%d: v\r\n" % n for n in range(MAX_HEADERS))
    assert _status(await _exchange(server.port, b"GET /healthz HTTP/1.1\r\n" + headers + b"\r\n")) == 200
    headers += b"X-One-More: v\r\n"
    assert _status(await _exchange(server.port, b"GET /healthz HTTP/1.1\r\n" + headers + b"\r\n")) == 431


async def test_half_closed_connections(server: _Server) -> None:
    # The request is whole, then the client shuts its side: the answer still comes.
    assert _status(await _exchange(server.port, b"GET /readyz HTTP/1.1\r\n\r\n", eof=True)) == 200
    # The client shuts its side inside the headers, or before finishing the request line.
    assert _status(await _exchange(server.port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n", eof=True)) == 400
    assert _status(await _exchange(server.port, b"GET /metr", eof=True)) == 400
    # Connected and closed without a byte: nothing to answer.
    assert await _exchange(server.port, b"", eof=True) == b""
    await _assert_serves_metrics(server.port)


async def test_a_slow_client_times_out_while_others_are_served(server: _Server) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"GET /metrics HTTP/1.1\r\n")
        await writer.drain()
        await _assert_serves_metrics(server.port)  # meanwhile
        assert _status(await asyncio.wait_for(reader.read(), TIMEOUT_S + 5)) == 408
    finally:
        writer.close()


async def test_a_client_trickling_headers_is_cut_off(server: _Server) -> None:
    """A header line every 0.1 s, each in time: the whole request still has one deadline.

    The client stops writing just before the deadline: a line arriving after the
    server closed would make it reset the connection, and the 408 could be lost.
    """
    loop = asyncio.get_running_loop()
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        started = loop.time()
        writer.write(b"GET /metrics HTTP/1.1\r\n")
        n = 0
        while loop.time() - started < TIMEOUT_S - 0.2:
            writer.write(b"X-Slow-%d: v\r\n" % n)
            await writer.drain()
            await asyncio.sleep(0.1)
            n += 1
        answer = await asyncio.wait_for(reader.read(), 5)
        assert _status(answer) == 408
        assert loop.time() - started < TIMEOUT_S + 1
    finally:
        writer.close()
    await _assert_serves_metrics(server.port)


async def test_a_client_that_never_reads_is_cut_off() -> None:
    """A /metrics answer far bigger than the socket buffers, to a client that does not read it."""
    registry = CollectorRegistry()
    Counter("binlake_probe_total", "a counter to find in /metrics", registry=registry).inc(3)
    big = Gauge("binlake_big", "many series", ["label"], registry=registry)
    for n in range(10_000):
        big.labels(f"value-{n:08d}-{'x' * 40}").set(n)  # about 800 KB of /metrics
    health = HealthServer(registry, request_timeout_s=TIMEOUT_S)
    await health.start("127.0.0.1", 0)
    assert health._server is not None
    for listening in health._server.sockets:
        listening.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    raw = socket.socket()
    try:
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect(("127.0.0.1", health.port))
        raw.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        await asyncio.sleep(0.5)
        assert health._connections == 1
        for _ in range(100):  # the server's drain times out after TIMEOUT_S and it drops the connection
            if health._connections == 0:
                break
            await asyncio.sleep(0.1)
        assert health._connections == 0
        await _assert_serves_metrics(health.port)
    finally:
        raw.close()
        await health.stop()


async def test_beyond_the_connection_cap_new_connections_are_closed(server: _Server) -> None:
    idle = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(MAX_CONNECTIONS)]
    try:
        await asyncio.sleep(0.1)
        assert _status(await _exchange(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")) is None
        for reader, _writer in idle:  # the idle ones time out (408) and free their places
            assert _status(await asyncio.wait_for(reader.read(), TIMEOUT_S + 5)) == 408
        await _assert_serves_metrics(server.port)
    finally:
        for _reader, writer in idle:
            writer.close()


class _Broken(Collector):
    """A collector that fails: a bug while answering, not a bad client."""

    def collect(self) -> Iterable[Metric]:
        raise RuntimeError("collector bug")


async def test_a_failure_while_answering_spares_the_server(server: _Server, caplog: pytest.LogCaptureFixture) -> None:
    broken = _Broken()
    server.health.registry.register(broken)
    assert _status(await _exchange(server.port, b"GET /metrics HTTP/1.1\r\n\r\n")) is None
    assert "metrics/health request failed" in caplog.text
    server.health.registry.unregister(broken)
    await _assert_serves_metrics(server.port)
