"""The traffic, produced at a steady pace while the controller works, its coordinates recorded.

The formats' messages go out interleaved, each format's in its order (messages are keyed by table, so a
table's changes stay in one partition, in order), in chunks every ``TICK_S`` so the whole traffic takes
about ``seconds``. Each chunk is produced inside the broker gate and awaited whole: the broker's restart
falls between chunks, and every message's partition and offset is known (``Truth.place``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

from aiokafka import AIOKafkaProducer

from tests.chaos.gate import BrokerGate
from tests.chaos.truth import Truth

TICK_S = 0.5


class Player:
    def __init__(self, bootstrap: str, truth: Truth, gate: BrokerGate, seconds: float) -> None:
        self.bootstrap = bootstrap
        self.truth = truth
        self.gate = gate
        self.seconds = seconds
        self.sent = 0
        self.finished = asyncio.Event()
        self._chunk = asyncio.Event()
        """Set (and replaced) once each chunk is in: the normalizers' transactions open right after."""

    async def next_chunk(self, timeout_s: float) -> bool:
        """Wait until the next chunk is in; False when none came within ``timeout_s`` (the traffic is over or
        held back by the broker gate)."""
        if self.finished.is_set():
            return False
        try:
            await asyncio.wait_for(self._chunk.wait(), timeout_s)
        except TimeoutError:
            return False
        return True

    def _chunks(self) -> Iterator[list[tuple[str, bytes, bytes]]]:
        per_tick = max(1, round(self.truth.messages * TICK_S / self.seconds))
        share = max(1, per_tick // len(self.truth.traffic))
        cursors = dict.fromkeys(self.truth.traffic, 0)
        while any(cursors[f] < len(item.messages) for f, item in self.truth.traffic.items()):
            chunk = []
            for fmt, item in self.truth.traffic.items():
                start = cursors[fmt]
                chunk += [(item.topic, key, value) for key, value in item.messages[start : start + share]]
                cursors[fmt] = start + share
            yield chunk

    async def play(self) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, enable_idempotence=True, linger_ms=20)
        await producer.start()
        started = time.monotonic()
        try:
            for tick, chunk in enumerate(self._chunks()):
                async with self.gate.use():
                    futures = [await producer.send(topic, value, key=key) for topic, key, value in chunk]
                    for (topic, key, _), meta in zip(chunk, await asyncio.gather(*futures), strict=True):
                        self.truth.place(topic, key, meta.partition, meta.offset)
                self.sent += len(chunk)
                self._chunk.set()
                self._chunk = asyncio.Event()
                await asyncio.sleep(max(0.0, started + (tick + 1) * TICK_S - time.monotonic()))
        finally:
            await producer.stop()
            self.finished.set()
