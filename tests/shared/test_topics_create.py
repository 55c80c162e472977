"""``binlake topics create`` on one real broker: one replica (all it can hold), a re-run changes nothing, and
more replicas than brokers are refused before anything is created. The three-broker side is in
test_devbroker_cluster.py, on the cluster that test starts."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from tests.support import kafka_tools
from tests.support.signal_probe import binlake_command

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]


def create(bootstrap: str, *args: str) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        binlake_command("topics", "create", *args, "--bootstrap-servers", bootstrap),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines()], done.stderr


async def topic_config(bootstrap: str, topic: str, key: str) -> str:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        (answer,) = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    finally:
        await admin.close()
    return str({entry[0]: entry[1] for entry in answer.resources[0][4]}[key])


async def test_one_broker_gets_one_replica_and_a_rerun_changes_nothing(kafka_bootstrap: str) -> None:
    events, dlq = kafka_tools.unique("events"), kafka_tools.unique("dlq")
    code, reports, _ = create(
        kafka_bootstrap, events, f"{dlq}:1", "--partitions", "2", "--config", "retention.ms=86400000"
    )
    assert code == 0
    assert [(r["topic"], r["created"], r["partitions"], r["replication_factor"]) for r in reports] == [
        (events, True, 2, 1),
        (dlq, True, 1, 1),
    ]
    assert await topic_config(kafka_bootstrap, dlq, "retention.ms") == "86400000"

    code, reports, _ = create(kafka_bootstrap, events, "--partitions", "5")
    assert code == 0
    assert reports == [
        {
            "topic": events,
            "created": False,
            "partitions": 2,  # never added: keys would move between partitions
            "replication_factor": 1,
            "min_insync_replicas": reports[0]["min_insync_replicas"],
            "shortfalls": [],
        }
    ]


async def test_more_replicas_than_brokers_are_refused_before_creating(kafka_bootstrap: str) -> None:
    topic = kafka_tools.unique("refused")
    code, reports, stderr = create(kafka_bootstrap, topic, "--replication-factor", "3")
    assert (code, reports) == (2, [])
    assert (
        "3 replicas asked but the cluster has 1 broker(s): start more brokers, or pass --replication-factor 1" in stderr
    )
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka_bootstrap)
    await admin.start()
    try:
        assert topic not in await admin.list_topics()
    finally:
        await admin.close()
