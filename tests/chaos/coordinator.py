"""Ask the broker's transaction coordinator which transactional ids have a transaction open (ListTransactions).

This is how the chaos controller knows a SIGKILL landed inside a transaction: the victim is frozen
(SIGSTOP), and the coordinator is asked for the ids in state ``Ongoing``. A transaction is Ongoing from
its first AddPartitionsToTxn until its producer sends EndTxn; a frozen producer can send nothing, so an
id of the victim's partitions listed Ongoing is a transaction the kill leaves open (the next owner's
``init_transactions`` aborts it). aiokafka has no client for this API (key 66, Kafka 3.0+), so the request
is written by hand: version 0, a flexible version (compact strings and arrays, tagged fields).
"""

from __future__ import annotations

import io
import socket
import struct
from typing import Final

LIST_TRANSACTIONS: Final = 66
ONGOING: Final = "Ongoing"


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_uvarint(data: io.BytesIO) -> int:
    shift = value = 0
    while True:
        byte = data.read(1)
        if not byte:
            raise ValueError("truncated ListTransactions response")
        value |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return value
        shift += 7


def _compact_string(text: str) -> bytes:
    raw = text.encode()
    return _uvarint(len(raw) + 1) + raw


def _read_compact_string(data: io.BytesIO) -> str:
    length = _read_uvarint(data) - 1
    return "" if length <= 0 else data.read(length).decode()


def _skip_tags(data: io.BytesIO) -> None:
    for _ in range(_read_uvarint(data)):
        _read_uvarint(data)  # the tag
        data.read(_read_uvarint(data))


def request(states: list[str], correlation_id: int = 1) -> bytes:
    """A ListTransactions v0 request for ``states``, with its size prefix."""
    client = b"binlake-chaos"
    header = struct.pack(">hhih", LIST_TRANSACTIONS, 0, correlation_id, len(client)) + client + _uvarint(0)
    body = _uvarint(len(states) + 1) + b"".join(_compact_string(s) for s in states)
    body += _uvarint(1) + _uvarint(0)  # no producer id filter; no tagged fields
    message = header + body
    return struct.pack(">i", len(message)) + message


def parse(response: bytes) -> dict[str, str]:
    """Transactional id -> state, from a ListTransactions v0 response (without its size prefix)."""
    data = io.BytesIO(response)
    data.read(4)  # correlation id
    _skip_tags(data)
    data.read(4)  # throttle time
    (error,) = struct.unpack(">h", data.read(2))
    if error:
        raise ValueError(f"ListTransactions failed with Kafka error code {error}")
    for _ in range(_read_uvarint(data) - 1):  # unknown state filters
        _read_compact_string(data)
    states: dict[str, str] = {}
    for _ in range(max(0, _read_uvarint(data) - 1)):
        transactional_id = _read_compact_string(data)
        data.read(8)  # producer id
        states[transactional_id] = _read_compact_string(data)
        _skip_tags(data)
    return states


def transactions(port: int, states: list[str], *, timeout_s: float = 5.0) -> dict[str, str]:
    """The transactions of the single broker on ``port`` in ``states`` (transactional id -> state)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(request(states))
        size = struct.unpack(">i", _read_exactly(sock, 4))[0]
        return parse(_read_exactly(sock, size))


def ongoing(port: int) -> set[str]:
    """Transactional ids with a transaction open now."""
    return set(transactions(port, [ONGOING]))


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        chunks += chunk
    return bytes(chunks)
