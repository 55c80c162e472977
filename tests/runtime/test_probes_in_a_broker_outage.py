"""A broker outage with a batch in flight: the normalizer stays live, is not ready, and says why.

Its own broker (the session's must stay up), stopped while a batch waits in
``send_offsets_to_transaction`` and started again on the same ports with the same
data. Before, ``/healthz`` turned 503 once the batch had waited past the liveness
window, and Kubernetes restarted every normalizer in the middle of the outage. Now,
for the whole outage, ``/healthz`` answers 200 and ``/readyz`` 503 "waiting on the
brokers since T"; both answer 200 once the brokers are back, and every input message
is in the unified topic exactly once.

The batch is held at ``send_offsets_to_transaction`` (the producer factory is the seam;
broker, coordinator and client are real) until its transaction has timed out on the
coordinator, then the broker stops and the call goes through to it: after the
restart the coordinator answers that the producer was fenced, as after a long outage
with the default timeout. Its producer is replaced, and the futures the fenced one
leaves must not end in the log as "Future exception was never retrieved" ERRORs.
They are reported when collected, so the test lets them be collected before it ends:
nothing is frozen out of the garbage collector (the runtime's ``gc.freeze``, which kept
them until the process's exit), and aiokafka's log records, whose exceptions' tracebacks
reach the producers, are not kept by pytest's log capture (a service's handler keeps
no record).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer, TopicPartition

from binlake.shared.config.settings import kafka_settings
from binlake.shared.devbroker import broker
from binlake.shared.kafka import runtime
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode, normalizer_settings, send_workload
from tests.support.service_process import probe

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

LIVENESS_TIMEOUT_S = 2.0
TRANSACTION_TIMEOUT_MS = 1000
HOLD_S = TRANSACTION_TIMEOUT_MS / 1000 + 10 + 3
"""Past the transaction timeout and the coordinator's scan for expired transactions (every 10 s by default)."""
OUTAGE_S = 4 * LIVENESS_TIMEOUT_S


class _HeldOffsets(AIOKafkaProducer):
    """The first batch to reach ``send_offsets_to_transaction`` waits there until the test lets it go on."""

    in_flight: asyncio.Event
    go_on: asyncio.Event
    held: int

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartition, int], group_id: str) -> None:
        if _HeldOffsets.held == 0:
            _HeldOffsets.held += 1
            _HeldOffsets.in_flight.set()
            await _HeldOffsets.go_on.wait()
        await super().send_offsets_to_transaction(offsets, group_id)


def _make(**options: Any) -> AIOKafkaProducer:
    return _HeldOffsets(**options)


async def test_a_broker_outage_keeps_the_normalizer_live_but_not_ready(
    kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    del kafka_bootstrap  # ensures the environment can run a broker; this test runs its own
    monkeypatch.setattr(runtime, "_frozen", True)  # see the module's docstring
    monkeypatch.setattr(logging.getLogger("aiokafka"), "propagate", False)
    monkeypatch.setattr(logging.getLogger("aiokafka"), "handlers", [logging.NullHandler()])
    _HeldOffsets.in_flight, _HeldOffsets.go_on, _HeldOffsets.held = asyncio.Event(), asyncio.Event(), 0
    run_dir = tmp_path / "broker"
    bootstrap = (await asyncio.to_thread(broker.start, run_dir)).bootstrap
    try:
        topics = Topics.fresh("outage-health")
        await kafka_tools.create_topics(bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
        sent = await send_workload(bootstrap, "canal-json", topics, events=400, seed=50, zone_name="UTC")
        settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
            update={
                "batch_max_messages": 50,
                "liveness_timeout_s": LIVENESS_TIMEOUT_S,
                "stall_threshold_s": LIVENESS_TIMEOUT_S,
                "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
                "retry_backoff_max_s": 2.0,
                "session_timeout_ms": 6000,
            }
        )
        normalizer = Normalizer(settings, kafka_settings(bootstrap), make_producer=_make)
        task = asyncio.create_task(normalizer.run())
        try:
            await asyncio.wait_for(_HeldOffsets.in_flight.wait(), 120)
            port = normalizer.health.port
            await asyncio.sleep(HOLD_S)
            await asyncio.to_thread(broker.stop, run_dir)
            _HeldOffsets.go_on.set()  # the batch's offsets go to a broker that is away
            outage = await _probe_for(port, OUTAGE_S)
            await asyncio.to_thread(broker.restart, run_dir)
            await kafka_tools.wait_caught_up(bootstrap, topics.group, topics.vendor, 2, timeout_s=120)
            recovered = await _until_green(port, timeout_s=60)
        finally:
            normalizer.stop()
            await asyncio.wait_for(task, 90)

        assert all(health[0] == 200 for health, _, _ in outage), outage
        assert all(ready[0] == 503 and "waiting on the brokers since " in ready[1] for _, ready, _ in outage), outage
        assert all(waited > LIVENESS_TIMEOUT_S for _, _, waited in outage), outage
        assert recovered == ((200, "ok\n"), (200, "ready\n"))
        registry = normalizer.metrics.registry
        assert (registry.get_sample_value("binlake_transaction_aborts_total", {"cause": "fenced"}) or 0) >= 1

        events = decode(await kafka_tools.read_all(bootstrap, topics.events))
        seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
        assert not [origin for origin, count in seen.items() if count > 1], "duplicates after the outage"
        assert set(seen) == set(sent.by_origin), "events lost in the outage"
    finally:
        await asyncio.to_thread(broker.stop, run_dir)
    del normalizer, task
    gc.collect()
    leftovers = [r.getMessage() for r in caplog.records if "exception was never retrieved" in r.getMessage()]
    assert leftovers == []


Answer = tuple[int, str]


async def _probe_for(port: int, seconds: float) -> list[tuple[Answer, Answer, float]]:
    """``/healthz``, ``/readyz`` and ``binlake_broker_wait_seconds``, twice a second for ``seconds``."""
    answers: list[tuple[Answer, Answer, float]] = []
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        health, ready = await probe(port, "/healthz"), await probe(port, "/readyz")
        answers.append((health, ready, _gauge((await probe(port, "/metrics"))[1], "binlake_broker_wait_seconds")))
        await asyncio.sleep(0.5)
    return answers


async def _until_green(port: int, *, timeout_s: float) -> tuple[Answer, Answer]:
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        health, ready = await probe(port, "/healthz"), await probe(port, "/readyz")
        if (health[0], ready[0]) == (200, 200) or asyncio.get_running_loop().time() > deadline:
            return health, ready
        await asyncio.sleep(0.5)


def _gauge(metrics: str, name: str) -> float:
    for line in metrics.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exported")
