"""`docker compose config` (a real compose v2 binary, make tools) accepts docker-compose.yml with every profile."""

from __future__ import annotations

import json

import pytest

from tests.deploy.deployment_files import COMPOSE
from tests.deploy.tools import run, tool

pytestmark = [pytest.mark.unit, pytest.mark.deploy]

PROFILES = ("traffic", "tools", "demo")


def test_compose_config_accepts_the_file() -> None:
    compose = tool("docker-compose")
    args = [compose, "--project-directory", str(COMPOSE.parent), "-f", str(COMPOSE)]
    for profile in PROFILES:
        args += ["--profile", profile]
    config = json.loads(run(*args, "config", "--format", "json").stdout)
    services = config["services"]
    assert {"kafka", "topics", "normalizer-canal", "sink", "prometheus", "grafana", "generator"} <= set(services)
    assert {"lake", "checkpoints", "ivy"} <= set(config["volumes"])
    # As compose reads them: loopback ports, the sink's target, the Kafka image the dev broker runs.
    for name, service in services.items():
        for port in service.get("ports", []):
            assert port.get("host_ip") == "127.0.0.1", (name, port)
    assert services["sink"]["build"]["target"] == "sink"
    assert services["normalizer-canal"]["build"]["target"] == "normalizer"


def test_the_default_stack_leaves_the_one_shot_tools_out() -> None:
    compose = tool("docker-compose")
    done = run(compose, "--project-directory", str(COMPOSE.parent), "-f", str(COMPOSE), "config", "--services")
    default = set(done.stdout.split())
    assert "sink" in default and "normalizer-canal" in default
    assert not default & {"generator", "demo", "lake-verify", "lake-show"}


def test_the_cluster_env_file_runs_three_voting_nodes_and_replicates() -> None:
    compose = tool("docker-compose")
    base = [compose, "--project-directory", str(COMPOSE.parent), "-f", str(COMPOSE)]
    cluster_env = str(COMPOSE.parent / "deploy" / "compose-cluster.env")
    config = json.loads(run(*base, "--env-file", cluster_env, "config", "--format", "json").stdout)
    services = config["services"]
    nodes = {name: services[name]["environment"] for name in ("kafka", "kafka-2", "kafka-3")}
    assert {env["KAFKA_NODE_ID"] for env in nodes.values()} == {"1", "2", "3"}
    for env in nodes.values():
        assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093,2@kafka-2:9093,3@kafka-3:9093"
        assert env["CLUSTER_ID"] == nodes["kafka"]["CLUSTER_ID"]
        assert env["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "3"
        assert env["KAFKA_TRANSACTION_STATE_LOG_MIN_ISR"] == env["KAFKA_MIN_INSYNC_REPLICAS"] == "2"
        assert env["KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR"] == "3"
    # The topics job waits for every node, so it counts three brokers and replicates three times.
    assert {
        name for name, dep in services["topics"]["depends_on"].items() if dep["condition"] == "service_healthy"
    } == set(nodes)
    for name in ("topics", "normalizer-canal", "sink"):
        assert (
            services[name]["environment"]["BINLAKE_KAFKA_BOOTSTRAP_SERVERS"] == "kafka:9092,kafka-2:9092,kafka-3:9092"
        )
    # Without the file: one node voting alone, one replica.
    single = json.loads(run(*base, "config", "--format", "json").stdout)["services"]
    assert "kafka-2" not in single and "kafka-3" not in single
    assert single["kafka"]["environment"]["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@kafka:9093"
    assert single["kafka"]["environment"]["KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR"] == "1"
