"""Exactly once under crashes: SIGKILL the normalizer again and again, lose nothing, double nothing.

The normalizer runs as a real ``binlake normalizer`` process. Six rounds each
add a backlog of input, start an instance (twice two instances sharing the
group, so partitions move between them in rebalances) and SIGKILL it a seeded
random moment after it has begun writing, while it works through the backlog.
The kill is aimed inside a transaction: the round's instances are frozen
(SIGSTOP) at random moments until the log shows records of an open
transaction (behind the last stable offset), and killed there; a transaction
has records on the broker only between its produce request and its commit, a
millisecond here, so an unaimed kill rarely lands in one. Should a round not
catch one within ``FREEZE_TRIES`` freezes, it kills anyway, and up to
``SPARE_ROUNDS`` more rounds run until one has.
A final instance then runs until the group has committed every input offset.
Every input message must then be represented exactly once in the unified topic
as read by a ``read_committed`` consumer, and the log must hold aborted
records: proof that the kills landed inside transactions.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from tests.support import kafka_tools
from tests.support.pipeline import Topics, decode

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]

EVENTS = 20000
ROUNDS = 6
SPARE_ROUNDS = 6
"""Rounds run only while no kill has yet been seen to leave a transaction open."""
FREEZE_TRIES = 60
PARTITIONS = 3
OUTPUT_PARTITIONS = 4
ROUND_BATCH = 6
"""Messages per poll for the instances that get killed (two per partition and transaction)."""


def _spawn(bootstrap: str, topics: Topics, log: Path, *, batch: int = 40) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    env.update(
        {
            "BINLAKE_FORMAT": "canal-json",
            "BINLAKE_INPUT_TOPICS": topics.vendor,
            "BINLAKE_OUTPUT_TOPIC": topics.events,
            "BINLAKE_DLQ_TOPIC": topics.dlq,
            "BINLAKE_GROUP_ID": topics.group,
            "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
            "BINLAKE_METRICS_PORT": "0",
            "BINLAKE_METRICS_HOST": "127.0.0.1",
            "BINLAKE_BATCH_MAX_MESSAGES": str(batch),
            "BINLAKE_SESSION_TIMEOUT_MS": "6000",
            "BINLAKE_LOG_LEVEL": "INFO",
        }
    )
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "binlake.shared.cli.main", "normalizer"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def _wait_for_line(path: Path, text: str, *, timeout_s: float) -> None:
    for _ in range(int(timeout_s / 0.1)):
        if path.exists() and text in path.read_text(errors="replace"):
            return
        await asyncio.sleep(0.1)
    raise TimeoutError(f"{path} never logged {text}")


async def _kill(process: subprocess.Popen[bytes]) -> None:
    process.send_signal(signal.SIGKILL)
    while process.poll() is None:
        await asyncio.sleep(0.05)


async def _kill_inside_a_transaction(
    bootstrap: str, topic: str, instances: list[subprocess.Popen[bytes]], rng: random.Random
) -> bool:
    """SIGKILL the instances while one holds records in an open transaction; True if they were caught there.

    Frozen by SIGSTOP, an instance can neither finish nor abort its transaction, so what the log shows
    after a moment (requests already sent are answered) is what the SIGKILL leaves behind.
    """
    inside = False
    for _ in range(FREEZE_TRIES):
        for process in instances:
            process.send_signal(signal.SIGSTOP)
        await asyncio.sleep(0.05)
        if await kafka_tools.open_transaction_records(bootstrap, topic, OUTPUT_PARTITIONS):
            inside = True
            break
        for process in instances:
            process.send_signal(signal.SIGCONT)
        await asyncio.sleep(rng.uniform(0.0, 0.03))
    for process in instances:
        await _kill(process)  # a stopped process dies as well
    return inside


async def test_sigkill_loses_and_duplicates_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    rng = random.Random(20261122)
    topics = Topics.fresh("eos")
    await kafka_tools.create_topics(
        kafka_bootstrap, {topics.vendor: PARTITIONS, topics.events: OUTPUT_PARTITIONS, topics.dlq: 1}
    )
    workload = Workload(seed=5, tables=4)
    render_fn = render.get("canal-json")
    ctx = render.RenderContext()
    items = [(f"{c.table}.{c.key}".encode(), render_fn(c, ctx)) for c in workload.run(EVENTS)]
    chunk = EVENTS // (ROUNDS + SPARE_ROUNDS)
    positions: list[tuple[int, int]] = []
    kills = kills_inside = rounds = 0
    for round_ in range(ROUNDS + SPARE_ROUNDS):
        if round_ >= ROUNDS and kills_inside:
            break
        # A fresh backlog before every instance starts, and a kill soon after it
        # begins writing, so the kill lands while it is inside a transaction.
        positions += await kafka_tools.produce(
            kafka_bootstrap, topics.vendor, items[round_ * chunk : (round_ + 1) * chunk]
        )
        logs = [tmp_path / f"round{round_}-a.log"]
        if round_ in (1, 3):
            logs.append(tmp_path / f"round{round_}-b.log")  # two instances: a rebalance inside the round
        # Tiny transactions (a few messages each) keep an instance busy through its backlog for
        # seconds even with the native fast lane. The kill waits until the instance has written
        # (start-up after the assignment can take longer than any fixed delay on a busy machine:
        # a CI run saw all 8 kills land before the first transaction), then lands a moment later.
        before = await kafka_tools.written(kafka_bootstrap, topics.events, OUTPUT_PARTITIONS)
        instances = [_spawn(kafka_bootstrap, topics, path, batch=ROUND_BATCH) for path in logs]
        await _wait_for_line(logs[0], '"msg":"partitions assigned"', timeout_s=60)
        await kafka_tools.wait_written(kafka_bootstrap, topics.events, OUTPUT_PARTITIONS, above=before, timeout_s=60)
        await asyncio.sleep(rng.uniform(0.0, 0.1))
        kills_inside += await _kill_inside_a_transaction(kafka_bootstrap, topics.events, instances, rng)
        kills += len(instances)
        rounds += 1
    positions += await kafka_tools.produce(kafka_bootstrap, topics.vendor, items[rounds * chunk :])

    final_log = tmp_path / "final.log"
    final = _spawn(kafka_bootstrap, topics, final_log)
    try:
        await _wait_for_line(final_log, '"msg":"consuming"', timeout_s=60)
        await kafka_tools.wait_caught_up(kafka_bootstrap, topics.group, topics.vendor, PARTITIONS, timeout_s=240)
    finally:
        final.send_signal(signal.SIGTERM)
        assert final.wait(60) == 0, final_log.read_text()[-3000:]

    events = decode(await kafka_tools.read_all(kafka_bootstrap, topics.events))
    seen = Counter((event.origin.partition, event.origin.offset) for _, event in events)
    duplicated = {origin: n for origin, n in seen.items() if n > 1}
    lost = set(positions) - set(seen)
    assert not duplicated, f"{len(duplicated)} input messages produced more than once, e.g. {list(duplicated)[:5]}"
    assert not lost, f"{len(lost)} input messages never produced, e.g. {sorted(lost)[:5]}"
    assert len(events) == EVENTS
    assert await kafka_tools.read_all(kafka_bootstrap, topics.dlq) == []
    assert kills == rounds + 2 and rounds >= ROUNDS
    assert kills_inside, f"no round of {rounds} caught an instance inside a transaction"
    # The kills did land inside transactions: the log holds aborted records that
    # read_committed readers never see.
    everything = await kafka_tools.read_all(kafka_bootstrap, topics.events, committed=False)
    assert len(everything) > len(events)
