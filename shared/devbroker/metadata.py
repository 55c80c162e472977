"""A Kafka Metadata request over a plain socket: the brokers a cluster has registered, partition leaders and ISRs.

The dev broker's start waits, and ``binlake dev broker status`` reports, without an
event loop or a Kafka client: a start runs in CLIs, threads and tests alike, and a
client would retry and log through a node that is still starting. Version 4 is the
oldest Kafka 4 still answers (KIP-896 removed 0 to 3) and the newest before the
flexible encoding (v9), so the layout below is fixed-width plus plain strings and
arrays. A broker answers Metadata only once it has registered with the controllers
and been unfenced, and lists only the unfenced brokers: a node that was stopped
drops out of ``brokers`` and of every ISR.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import dataclass, field
from typing import Final

API_KEY: Final = 3
VERSION: Final = 4
CLIENT_ID: Final = b"binlake"


@dataclass(frozen=True, slots=True)
class PartitionState:
    partition: int
    leader: int
    """The leader's node id; -1 while the partition has none."""
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error: int = 0


@dataclass(frozen=True, slots=True)
class Metadata:
    brokers: dict[int, tuple[str, int]]
    """Node id -> (host, port) of every registered, unfenced broker."""
    controller: int
    """The node id the brokers name as controller (in KRaft a random broker: clients cannot reach controllers)."""
    topics: dict[str, list[PartitionState]] = field(default_factory=dict)
    internal: frozenset[str] = frozenset()


def request(correlation_id: int = 1) -> bytes:
    """A size-prefixed Metadata v4 request for every topic, creating none."""
    header = struct.pack(">hhih", API_KEY, VERSION, correlation_id, len(CLIENT_ID)) + CLIENT_ID
    body = struct.pack(">ib", -1, 0)  # topics: null (all); allow_auto_topic_creation: false
    return struct.pack(">i", len(header) + len(body)) + header + body


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.at = 0

    def take(self, fmt: str) -> int:
        (value,) = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return int(value)

    def string(self) -> str | None:
        size = self.take(">h")
        if size < 0:
            return None
        text = self.data[self.at : self.at + size].decode("utf-8")
        self.at += size
        return text

    def ints(self) -> tuple[int, ...]:
        return tuple(self.take(">i") for _ in range(self.take(">i")))


def parse(body: bytes) -> Metadata:
    """A Metadata v4 response (after its size prefix)."""
    read = _Reader(body)
    read.take(">i")  # correlation id
    read.take(">i")  # throttle time
    brokers: dict[int, tuple[str, int]] = {}
    for _ in range(read.take(">i")):
        node = read.take(">i")
        host = read.string() or ""
        brokers[node] = (host, read.take(">i"))
        read.string()  # rack
    read.string()  # cluster id
    controller = read.take(">i")
    topics: dict[str, list[PartitionState]] = {}
    internal: set[str] = set()
    for _ in range(read.take(">i")):
        read.take(">h")  # the topic's error code
        name = read.string() or ""
        if read.take(">b"):
            internal.add(name)
        partitions = []
        for _ in range(read.take(">i")):
            error = read.take(">h")
            partition = read.take(">i")
            leader = read.take(">i")
            partitions.append(PartitionState(partition, leader, read.ints(), read.ints(), error))
        topics[name] = sorted(partitions, key=lambda state: state.partition)
    return Metadata(brokers, controller, topics, frozenset(internal))


def fetch(port: int, *, timeout_s: float = 2.0) -> Metadata | None:
    """The cluster's metadata as the broker on loopback ``port`` knows it; None when it does not answer (yet)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
            sock.sendall(request())
            size = int.from_bytes(_exactly(sock, 4), "big")
            return parse(_exactly(sock, size))
    except (OSError, struct.error, UnicodeDecodeError):
        return None


def _exactly(sock: socket.socket, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 16))
        if not chunk:
            raise ConnectionError("the broker closed the connection mid-answer")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
