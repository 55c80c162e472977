"""When the changelog writer closes a batch (``changelog.writer._next_batch``): the trigger's timing rule.

Batches start ``trigger_interval_s`` apart, as a Spark processing-time
trigger's micro-batches do; a batch whose start is already past (the batch
before took longer) takes what has arrived without waiting for more. The
consumer here is a scripted stand-in for ``AIOKafkaConsumer.getmany``: the
rule is pure timing, the real consumer is in ``test_changelog_writer``.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

import pytest

from binlake.spark_sink.changelog import writer

pytestmark = [pytest.mark.unit, pytest.mark.asyncio]


@dataclass
class _Message:
    topic: str
    partition: int
    offset: int
    timestamp: int = 0
    key: bytes | None = None
    value: bytes | None = b"v"


@dataclass
class _Consumer:
    """Hands out one record every ``every_s`` seconds (the first ``ready`` ones at once), as polls ask."""

    every_s: float
    ready: int = 0
    started: float = field(default_factory=time.monotonic)
    handed: int = 0
    polls: int = 0

    async def getmany(self, *, timeout_ms: int, max_records: int) -> dict[Any, list[_Message]]:
        self.polls += 1
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            arrived = self.ready + int((time.monotonic() - self.started) / self.every_s)
            if arrived > self.handed or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.005)
        count = min(max(0, arrived - self.handed), max_records)
        out = [_Message("t", 0, self.handed + i) for i in range(count)]
        self.handed += count
        return {"t-0": out} if out else {}


async def _batch(consumer: _Consumer, *, close_at: float | None, interval_s: float = 0.5) -> tuple[int, float]:
    started = time.monotonic()
    records = await writer._next_batch(consumer, 10_000, interval_s, asyncio.Event(), close_at=close_at)  # type: ignore[arg-type]
    return len(records), time.monotonic() - started


async def test_a_first_batch_gathers_an_interval_after_its_first_record() -> None:
    count, took = await _batch(_Consumer(every_s=0.01, ready=3), close_at=None)
    assert 0.45 <= took < 2.0
    assert count > 30


async def test_a_batch_whose_start_is_past_takes_what_arrived_at_once() -> None:
    consumer = _Consumer(every_s=10.0, ready=500)
    count, took = await _batch(consumer, close_at=time.monotonic() - 2.0, interval_s=3.0)
    assert count == 500
    assert took < 1.0, "a late batch must not wait another interval"


async def test_a_batch_closes_at_its_start_not_an_interval_after_its_first_record() -> None:
    close_at = time.monotonic() + 0.3
    count, took = await _batch(_Consumer(every_s=0.01, ready=1), close_at=close_at, interval_s=5.0)
    assert 0.25 <= took < 2.0
    assert count > 10


async def test_an_idle_topic_returns_nothing_after_a_second() -> None:
    count, took = await _batch(_Consumer(every_s=100.0), close_at=time.monotonic() + 5.0)
    assert count == 0
    assert 0.9 <= took < 3.0, "the caller's liveness tick needs the poll back within about a second"
