"""``binlake`` services as real processes for a test: their environment, output, HTTP endpoints and sockets."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families


@dataclass
class Service:
    """A ``binlake <command>`` process whose stdout and stderr go to one file."""

    command: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] = field(init=False)
    started: float = field(init=False)

    def __post_init__(self) -> None:
        self.started = time.monotonic()
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "binlake.shared.cli.main", *self.command],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )

    def wait(self, timeout_s: float) -> tuple[int, float]:
        """Its exit status and seconds from start to exit (killed, and the test failed, past ``timeout_s``)."""
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
            raise AssertionError(
                f"{self.command[0]} still ran after {timeout_s:.0f} s:\n{self.output()[-3000:]}"
            ) from None
        return code, time.monotonic() - self.started

    def stop(self, timeout_s: float = 60) -> int:
        """SIGTERM, then its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout_s)[0]

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def clean_env(**values: str) -> dict[str, str]:
    """This process' environment without ``BINLAKE_`` variables, plus ``values``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("BINLAKE_")}
    env.update(values)
    return env


def http_get(port: int, path: str) -> tuple[int, str] | None:
    """Status and body of ``http://127.0.0.1:<port><path>``; None while nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", errors="replace")
    except (OSError, urllib.error.URLError):
        return None


async def probe(port: int, path: str, *, timeout_s: float | None = None) -> tuple[int, str]:
    """Status and body of ``GET <path>`` on 127.0.0.1:``port``, the way a probe asks (one request, read until the
    server closes); TimeoutError when no whole answer came within ``timeout_s`` (None: no limit)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        await writer.drain()
        response = (await asyncio.wait_for(reader.read(), timeout_s)).decode()
    finally:
        writer.close()
    return int(response.split(" ", 2)[1]), response.split("\r\n\r\n", 1)[1]


def metric_total(text: str, name: str) -> float:
    """The sum of every series of sample ``name`` in a /metrics page."""
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name
    )


def listening_addresses(port: int) -> set[str]:
    """The local addresses (hex, as /proc/net/tcp* gives them) of sockets listening on ``port``."""
    found: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            address, _, hex_port = fields[1].rpartition(":")
            if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(address)
    return found


LOOPBACK_V4 = "0100007F"
"""127.0.0.1 in /proc/net/tcp (little-endian hex)."""
