"""The compose stack's `cluster` profile for real (make test-deploy): three Kafka nodes, binlake's topics with
three replicas and min ISR 2, and the normalizer going on with one node stopped.

`docker compose --env-file deploy/compose-cluster.env` brings up kafka, kafka-2 and kafka-3, the topics job
and the canal-json normalizer. With kafka-2 stopped, the generator's traffic is normalized: the unified
topic's committed events are exactly the generator's changes (nothing lost or doubled) and no message is a
dead letter; kafka-2 started again rejoins every ISR. The test reads the brokers from this host through
their published ports. Skips, saying so, outside `make test-deploy` (BINLAKE_DEPLOY_STACK=1).
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.deploy.deployment_files import COMPOSE
from tests.deploy.tools import tool
from tests.support import kafka_tools

pytestmark = [pytest.mark.integration]

PROJECT: Final = "binlake-it-cluster"
CLUSTER_ENV: Final = COMPOSE.parent / "deploy" / "compose-cluster.env"
SERVICES: Final = ["kafka", "kafka-2", "kafka-3", "topics", "normalizer-canal"]
HOST_BOOTSTRAP: Final = "127.0.0.1:29092,127.0.0.1:29094"  # kafka and kafka-3: kafka-2 is the one stopped
EVENTS: Final = 3000


def _compose(*args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    command = [
        tool("docker-compose"),
        *("-p", PROJECT, "--project-directory", str(COMPOSE.parent), "-f", str(COMPOSE)),
        *("--env-file", str(CLUSTER_ENV)),
    ]
    env = dict(os.environ, BINLAKE_GENERATE_EVENTS=str(EVENTS))
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"{done.args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    if os.environ.get("BINLAKE_DEPLOY_STACK") != "1":
        pytest.skip("the compose stack runs in `make test-deploy` (images, a container engine; minutes)")
    assert os.environ.get("DOCKER_HOST"), "make test-deploy sets DOCKER_HOST to podman's Docker API socket"
    _compose("down", "-v", "--remove-orphans")
    try:
        _ok(_compose("up", "-d", "--no-build", *SERVICES))
        yield
    finally:
        logs = _compose("logs", "--no-color", "--tail", "150")
        print(logs.stdout[-20000:])
        _compose("down", "-v", "--remove-orphans")


async def _partitions(topic: str) -> list[dict[str, Any]]:
    admin = AIOKafkaAdminClient(bootstrap_servers=HOST_BOOTSTRAP)
    await admin.start()
    try:
        (described,) = await admin.describe_topics([topic])
    finally:
        await admin.close()
    found: list[dict[str, Any]] = described["partitions"]
    return found


def test_the_cluster_profile_replicates_and_survives_a_stopped_node(cluster: None) -> None:
    created = [
        json.loads(line) for line in _ok(_compose("logs", "--no-log-prefix", "topics")).splitlines() if "{" in line
    ]
    assert {r["topic"] for r in created} == {"canal.orders", "binlake.events", "binlake.dlq"}, created
    assert {(r["replication_factor"], r["min_insync_replicas"]) for r in created} == {(3, 2)}, created

    _ok(_compose("stop", "kafka-2"))
    # --no-deps: the topics job is done, and its dependencies would start kafka-2 again.
    generated = _compose("--profile", "traffic", "run", "--rm", "--no-deps", "generator")
    _ok(generated)
    summary = json.loads(next(line for line in generated.stderr.splitlines() if line.startswith('{"format"')))
    assert summary["events"] > 0

    deadline = time.monotonic() + 600
    while len(events := asyncio.run(kafka_tools.read_all(HOST_BOOTSTRAP, "binlake.events"))) < summary["events"]:
        assert time.monotonic() < deadline, f"{len(events)} of {summary['events']} events after 10 minutes"
        time.sleep(10)
    time.sleep(10)  # a doubled batch would land now
    assert len(asyncio.run(kafka_tools.read_all(HOST_BOOTSTRAP, "binlake.events"))) == summary["events"]
    assert asyncio.run(kafka_tools.read_all(HOST_BOOTSTRAP, "binlake.dlq")) == []
    for partition in asyncio.run(_partitions("binlake.events")):
        assert len(partition["replicas"]) == 3 and 2 not in partition["isr"], partition

    _ok(_compose("start", "kafka-2"))
    deadline = time.monotonic() + 180
    while not all(len(p["isr"]) == 3 for p in asyncio.run(_partitions("binlake.events"))):
        assert time.monotonic() < deadline, "kafka-2 did not rejoin the ISR"
        time.sleep(5)
