"""A stop is bounded by BINLAKE_STOP_TIMEOUT_S in every state; the transaction it leaves open, the broker aborts.

aiokafka waits on the brokers without limit: an idempotent producer's batches never
expire, so a commit, an abort or a producer's ``stop()`` in an outage waited until the
brokers came back, and a SIGTERM then ended only in Kubernetes' SIGKILL. Now the loop
is cut off at the stop's deadline and its clients are closed without the brokers
(shared/kafka/closing.py). The batch in flight stays an open transaction, which its
coordinator aborts after the transaction timeout with no producer of its id started
again: nothing of it becomes visible, and the next normalizer reads its input again.

Two states, each on a real broker: a commit that never ends (the producer factory is
the seam, the broker and coordinator are real), and a ``binlake normalizer`` process
signalled while its own broker is stopped, after which a new normalizer finishes the
input exactly once.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from aiokafka import AIOKafkaProducer

from binlake.shared.config.settings import kafka_settings
from binlake.shared.devbroker import broker
from binlake.shared.devbroker.broker import free_port
from binlake.shared.kafka.runtime import Normalizer
from tests.support import kafka_tools
from tests.support.pipeline import (
    Sent,
    Topics,
    decode,
    normalizer_settings,
    run_normalizer_until_caught_up,
    send_workload,
)
from tests.support.service_process import Service, clean_env, http_get, metric_total

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

STOP_TIMEOUT_S = 3.0
TRANSACTION_TIMEOUT_MS = 12000
"""Long enough that the coordinator cannot abort the open transaction before the test has looked at it: with 2 s,
its scan (every 10 s) sometimes did, on a loaded clean-clone CI run, and the records were gone when counted."""
ABORTED_WITHIN_S = TRANSACTION_TIMEOUT_MS / 1000 + 10 + 20
"""The timeout, the coordinator's scan for expired transactions (every 10 s by default), and a slow machine's margin."""


class _CommitNeverEnds(AIOKafkaProducer):
    """Every commit waits for good, as one does for brokers that never answer."""

    reached: asyncio.Event

    async def commit_transaction(self) -> None:
        _CommitNeverEnds.reached.set()
        await asyncio.Event().wait()


def _never_commits(**options: Any) -> AIOKafkaProducer:
    return _CommitNeverEnds(**options)


async def _aborted_by_the_coordinator(bootstrap: str, topic: str, partitions: int) -> None:
    """Wait until no record of ``topic`` is behind its last stable offset (no open transaction holds one)."""
    deadline = time.monotonic() + ABORTED_WITHIN_S
    while await kafka_tools.open_transaction_records(bootstrap, topic, partitions):
        assert time.monotonic() < deadline, f"a transaction on {topic} is still open after {ABORTED_WITHIN_S:.0f} s"
        await asyncio.sleep(0.5)


async def _exactly_once(bootstrap: str, topics: Topics, sent: Sent) -> None:
    events = decode(await kafka_tools.read_all(bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    assert not [origin for origin, count in seen.items() if count > 1], "duplicates"
    assert set(seen) == set(sent.by_origin), "lost input"


async def test_a_stop_during_a_commit_that_never_ends(
    kafka_bootstrap: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _CommitNeverEnds.reached = asyncio.Event()
    topics = Topics.fresh("stop-commit")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 1, topics.events: 2, topics.dlq: 1})
    sent = await send_workload(kafka_bootstrap, "canal-json", topics, events=200, seed=83, zone_name="UTC")
    settings = normalizer_settings("canal-json", topics, tmp_path, "UTC").model_copy(
        update={
            "batch_max_messages": 50,
            "stop_timeout_s": STOP_TIMEOUT_S,
            "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
        }
    )
    normalizer = Normalizer(settings, kafka_settings(kafka_bootstrap), make_producer=_never_commits)
    task = asyncio.create_task(normalizer.run())
    try:
        await asyncio.wait_for(_CommitNeverEnds.reached.wait(), 60)
    finally:
        with caplog.at_level(logging.WARNING, logger="binlake.normalizer"):
            asked = time.monotonic()
            normalizer.stop()
            await asyncio.wait_for(task, 30)
            took = time.monotonic() - asked
    assert took <= STOP_TIMEOUT_S + 0.2, f"the stop took {took:.2f} s"
    timed_out = [r for r in caplog.records if r.getMessage() == "stop timed out: closing without the brokers"]
    assert [r.__dict__["transactions_left_open"] for r in timed_out] == [[f"{topics.vendor}:0"]]

    # The batch's events were delivered before its commit: they wait, uncommitted, behind the last stable offset,
    # until the coordinator aborts the transaction. No producer of its transactional id starts meanwhile.
    assert await kafka_tools.open_transaction_records(kafka_bootstrap, topics.events, 2) > 0
    await _aborted_by_the_coordinator(kafka_bootstrap, topics.events, 2)
    assert await kafka_tools.read_all(kafka_bootstrap, topics.events) == []

    await run_normalizer_until_caught_up(kafka_bootstrap, settings, 1)
    await _exactly_once(kafka_bootstrap, topics, sent)


async def test_a_stop_during_a_broker_outage_exits_within_the_stop_timeout(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    del kafka_bootstrap  # ensures the environment can run a broker; this test stops its own
    run_dir = tmp_path / "broker"
    bootstrap = (await asyncio.to_thread(broker.start, run_dir)).bootstrap
    try:
        topics = Topics.fresh("stop-outage")
        await kafka_tools.create_topics(bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
        sent = await send_workload(bootstrap, "canal-json", topics, events=3000, seed=84, zone_name="UTC")
        port = free_port()
        env = clean_env(
            **topics.normalizer_env(),
            BINLAKE_FORMAT="canal-json",
            BINLAKE_KAFKA_BOOTSTRAP_SERVERS=bootstrap,
            BINLAKE_METRICS_PORT=str(port),
            BINLAKE_BATCH_MAX_MESSAGES="5",  # many small batches: one is in flight when the broker stops
            BINLAKE_STOP_TIMEOUT_S=str(STOP_TIMEOUT_S),
            BINLAKE_TRANSACTION_TIMEOUT_MS=str(TRANSACTION_TIMEOUT_MS),
            BINLAKE_RETRY_BACKOFF_MAX_S="2",
            BINLAKE_LOG_LEVEL="INFO",
        )
        service = Service(["normalizer"], env, tmp_path / "normalizer.log")
        try:
            deadline = time.monotonic() + 90
            while (page := http_get(port, "/metrics")) is None or not metric_total(
                page[1], "binlake_consumed_messages_total"
            ):
                assert service.process.poll() is None and time.monotonic() < deadline, service.output()[-3000:]
                await asyncio.sleep(0.2)
            await asyncio.to_thread(broker.stop, run_dir)
            await asyncio.sleep(2)  # the outage: the batch in flight waits on the brokers, or the loop backs off
            signalled = time.monotonic()
            service.process.send_signal(signal.SIGTERM)
            code = await asyncio.to_thread(service.process.wait, 60)
            took = time.monotonic() - signalled
        finally:
            service.kill()
        output = service.output()
        assert code == 0, output[-3000:]
        # No traceback of binlake's own, nor an uncaught one. aiokafka's sender logs its own (an add-partitions
        # request cut by the broker's stop, seen in CI): the broker's doing, and the transaction is replaced.
        assert not _own_tracebacks(output), output[-3000:]
        # The batches failed in the forced close: their errors read, none of aiokafka's callbacks failing.
        assert "exception was never retrieved" not in output, output[-3000:]
        assert "Exception in callback" not in output, output[-3000:]
        # The process' own exit (asyncio.run's last cancellations, the interpreter's teardown) comes on top.
        assert took <= STOP_TIMEOUT_S + 1.0, f"SIGTERM to exit: {took:.2f} s\n{output[-3000:]}"
        print(f"SIGTERM in the outage to exit: {took:.2f} s")

        # The transaction the stop left open: the next normalizer's producers abort it as they start (the first
        # test shows the coordinator's own timeout doing it), and it reads the batch's input again.
        await asyncio.to_thread(broker.restart, run_dir)
        await run_normalizer_until_caught_up(bootstrap, normalizer_settings("canal-json", topics, tmp_path, "UTC"), 2)
        await _exactly_once(bootstrap, topics, sent)
    finally:
        await asyncio.to_thread(broker.stop, run_dir)


def _own_tracebacks(output: str) -> list[str]:
    """The log's lines with a traceback that is not aiokafka's own log record (JSON lines with an ``exc``)."""
    found = []
    for line in output.splitlines():
        if "Traceback" not in line:
            continue
        try:
            record = json.loads(line)
        except ValueError:
            found.append(line)  # printed by the interpreter: an uncaught exception
            continue
        if not str(record.get("logger", "")).startswith("aiokafka"):
            found.append(line)
    return found
