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
import time
from collections.abc import Iterator
from typing import Any, Final

import pytest
from aiokafka.admin import AIOKafkaAdminClient

from tests.deploy.compose_project import ComposeProject
from tests.deploy.deployment_files import COMPOSE
from tests.support import kafka_tools

pytestmark = [pytest.mark.integration]

PROJECT: Final = "binlake-it-cluster"
CLUSTER_ENV: Final = COMPOSE.parent / "deploy" / "compose-cluster.env"
SERVICES: Final = ["kafka", "kafka-2", "kafka-3", "topics", "normalizer-canal"]
HOST_BOOTSTRAP: Final = "127.0.0.1:29092,127.0.0.1:29094"  # kafka and kafka-3: kafka-2 is the one stopped
EVENTS: Final = 3000


CLUSTER: Final = ComposeProject(PROJECT, EVENTS, CLUSTER_ENV)


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    with CLUSTER.up(SERVICES, log_tail=150):
        yield


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
        json.loads(line) for line in CLUSTER.ok("logs", "--no-log-prefix", "topics").stdout.splitlines() if "{" in line
    ]
    assert {r["topic"] for r in created} == {"canal.orders", "binlake.events", "binlake.dlq"}, created
    assert {(r["replication_factor"], r["min_insync_replicas"]) for r in created} == {(3, 2)}, created

    CLUSTER.ok("stop", "kafka-2")
    # --no-deps: the topics job is done, and its dependencies would start kafka-2 again.
    generated = CLUSTER.ok("--profile", "traffic", "run", "--rm", "--no-deps", "generator")
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

    CLUSTER.ok("start", "kafka-2")
    deadline = time.monotonic() + 180
    while not all(len(p["isr"]) == 3 for p in asyncio.run(_partitions("binlake.events"))):
        assert time.monotonic() < deadline, "kafka-2 did not rejoin the ISR"
        time.sleep(5)
