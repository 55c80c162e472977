"""A consume loop wedged while the broker answers still fails ``/healthz``: only Kafka waits keep it live.

The normalizer runs on its own event loop in a thread, as in a service, so the test's
probes come from outside it as the kubelet's do. With the session's broker up all along,
the loop is wedged twice, then let go:

- on something that is not Kafka's: the lock its batches take is held (a deadlock). The
  loop is inside no broker wait, so past ``BINLAKE_LIVENESS_TIMEOUT_S`` ``/healthz``
  answers 503, and the orchestrator would restart it;
- by CPU work: a parse that holds the event loop (a stand-in sleeps rather than burn one
  of the machine's cores). The health server runs on the same loop and answers nothing,
  which a probe with a timeout (the chart's ``timeoutSeconds``, 3 s) counts as a failure.

Each time the loop goes on afterwards, ``/healthz`` is 200 again and every message is
in the unified topic once.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from binlake.shared.config.settings import kafka_settings
from binlake.shared.kafka.runtime import Normalizer
from binlake.shared.normalize.codec import Codec, Normalized
from binlake.shared.parsing.result import Rejected
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings, send_workload
from tests.support.service_process import probe

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

LIVENESS_TIMEOUT_S = 2.0
PROBE_TIMEOUT_S = 3.0
"""The chart's probes' ``timeoutSeconds``."""
CPU_HOLD_S = PROBE_TIMEOUT_S + 3
"""Past one probe's timeout; the session timeout is longer, so the group keeps the partition (heartbeats
run on the held loop too)."""


class _HoldsTheLoop:
    """The normalizer's codec, except that the first message after ``armed`` holds the event loop."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.format_id, self.version = codec.format_id, codec.version
        self.armed = threading.Event()
        self.holding = threading.Event()

    def __call__(self, raw: bytes, topic: str, partition: int, offset: int) -> Normalized | Rejected:
        if self.armed.is_set() and not self.holding.is_set():
            self.holding.set()
            time.sleep(CPU_HOLD_S)  # the event loop runs nothing meanwhile, as under a parser stuck in CPU work
        return self.codec(raw, topic, partition, offset)


class _ServiceThread:
    """``normalizer.run()`` on an event loop of its own (``asyncio.run``, as the CLI does), in a thread."""

    def __init__(self, normalizer: Normalizer) -> None:
        self.normalizer = normalizer
        self.started = threading.Event()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread = threading.Thread(target=asyncio.run, args=(self._serve(),))
        self.thread.start()

    async def _serve(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.started.set()
        await self.normalizer.run()

    async def port(self) -> int:
        assert await asyncio.to_thread(self.started.wait, 30)
        for _ in range(600):
            if self.normalizer.health._server is not None:
                return self.normalizer.health.port
            await asyncio.sleep(0.05)
        raise AssertionError("the health server did not start")

    async def stop(self) -> None:
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.normalizer.stop)
        await asyncio.to_thread(self.thread.join, 90)
        assert not self.thread.is_alive(), "the normalizer did not stop"


async def _hold(lock: asyncio.Lock, release: threading.Event) -> None:
    async with lock:
        while not release.is_set():
            await asyncio.sleep(0.05)


Answer = tuple[int, str] | None


async def _probe(port: int) -> Answer:
    """``/healthz``'s answer, or None when none came within the probe's timeout."""
    try:
        return await probe(port, "/healthz", timeout_s=PROBE_TIMEOUT_S)
    except TimeoutError:
        return None


async def _until(port: int, done: Callable[[Answer], bool], timeout_s: float) -> Answer:
    """``/healthz``'s answer once ``done`` accepts it, or the last one after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        answer = await _probe(port)
        if done(answer) or time.monotonic() > deadline:
            return answer
        await asyncio.sleep(0.25)


def _ok(answer: Answer) -> bool:
    return answer == (200, "ok\n")


def _failed(answer: Answer) -> bool:
    return answer is not None and answer[0] == 503


async def test_a_wedged_loop_fails_liveness_while_the_broker_answers(kafka_bootstrap: str, tmp_path: Path) -> None:
    topics = Topics.fresh("wedged")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 1, topics.events: 1, topics.dlq: 1})
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={"liveness_timeout_s": LIVENESS_TIMEOUT_S, "batch_max_messages": 50, "session_timeout_ms": 30000}
    )
    normalizer = Normalizer(settings, kafka_settings(kafka_bootstrap))
    codec = _HoldsTheLoop(normalizer.codec)
    normalizer.codec = codec
    sent = await send_workload(kafka_bootstrap, "canal-json", topics, events=100, seed=60, zone_name="UTC")
    service = _ServiceThread(normalizer)
    try:
        port = await service.port()
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1, timeout_s=120)
        assert await _probe(port) == (200, "ok\n")

        # A deadlock: the next batch waits on a lock no one releases, while the broker answers.
        release = threading.Event()
        assert service.loop is not None
        held = asyncio.run_coroutine_threadsafe(_hold(normalizer._lock, release), service.loop)
        more = await send_workload(kafka_bootstrap, "canal-json", topics, events=100, seed=61, zone_name="UTC")
        wedged = await _until(port, _failed, timeout_s=LIVENESS_TIMEOUT_S + 30)
        assert not await kafka_tools.group_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1)
        release.set()
        await asyncio.wrap_future(held)
        assert wedged is not None
        assert wedged[0] == 503, wedged
        assert wedged[1].startswith("stalled: no progress for ") and "not waiting on the brokers" in wedged[1]
        assert await _until(port, _ok, timeout_s=30) == (200, "ok\n")
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1, timeout_s=60)

        # CPU work that holds the event loop: the health server cannot answer at all.
        codec.armed.set()
        last = await send_workload(kafka_bootstrap, "canal-json", topics, events=100, seed=62, zone_name="UTC")
        assert await asyncio.to_thread(codec.holding.wait, 60)
        unanswered = await _probe(port)
        assert unanswered is None, unanswered
        assert await _until(port, _ok, timeout_s=CPU_HOLD_S + 30) == (200, "ok\n")
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, 1, timeout_s=60)
    finally:
        await service.stop()

    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    assert not [origin for origin, count in seen.items() if count > 1], "duplicates"
    assert set(seen) == set(sent.by_origin) | set(more.by_origin) | set(last.by_origin), "lost input"
