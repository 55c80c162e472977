"""A Kafka broker in a container, through Testcontainers (BINLAKE_TESTCONTAINERS=1; conftest.py).

The image is apache/kafka's kind (configured by KAFKA_* variables, KRaft, CLUSTER_ID): apache/kafka itself
where a registry serves it, or the local image `make images` builds (deploy/podman/kafka.Dockerfile) where
none does, named by BINLAKE_TESTCONTAINERS_KAFKA_IMAGE. The host port is picked before the start, so the
broker advertises the address the tests reach it at. Testcontainers' Kafka module is written for
Confluent's images (their scripts, their version numbers), hence a generic container here. Ryuk, the
reaper container, is disabled where the engine cannot run it (TESTCONTAINERS_RYUK_DISABLED=true, podman
in make test-deploy); the container is stopped by this context manager either way.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager

from binlake.shared.devbroker.broker import free_port
from tests.deploy.deployment_files import dev_broker_kafka_version


def image() -> str:
    return os.environ.get("BINLAKE_TESTCONTAINERS_KAFKA_IMAGE", f"apache/kafka:{dev_broker_kafka_version()}")


@contextmanager
def kafka_container(timeout_s: float = 180) -> Iterator[str]:
    from testcontainers.core.container import DockerContainer

    port = free_port()
    container = (
        DockerContainer(image())
        .with_bind_ports(9092, port)
        .with_env("CLUSTER_ID", "4L6g3nShT-eMCtK--X86sw")
        .with_env("KAFKA_NODE_ID", "1")
        .with_env("KAFKA_PROCESS_ROLES", "broker,controller")
        .with_env("KAFKA_CONTROLLER_QUORUM_VOTERS", "1@localhost:9093")
        .with_env("KAFKA_CONTROLLER_LISTENER_NAMES", "CONTROLLER")
        # The tests reach PLAINTEXT at the host's port; the broker reaches itself (the transaction
        # coordinator's requests) on BROKER, inside the container.
        .with_env("KAFKA_LISTENERS", "PLAINTEXT://:9092,CONTROLLER://:9093,BROKER://:9094")
        .with_env("KAFKA_ADVERTISED_LISTENERS", f"PLAINTEXT://127.0.0.1:{port},BROKER://localhost:9094")
        .with_env("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,BROKER:PLAINTEXT")
        .with_env("KAFKA_INTER_BROKER_LISTENER_NAME", "BROKER")
        .with_env("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_TRANSACTION_STATE_LOG_MIN_ISR", "1")
        .with_env("KAFKA_SHARE_COORDINATOR_STATE_TOPIC_REPLICATION_FACTOR", "1")
        .with_env("KAFKA_SHARE_COORDINATOR_STATE_TOPIC_MIN_ISR", "1")
        .with_env("KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS", "0")
        .with_env("KAFKA_LOG_DIRS", "/var/lib/kafka/data")
    )
    container.start()
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            logs = b"".join(part for part in container.get_logs() if part)
            if b"Kafka Server started" in logs:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"Kafka did not start in {timeout_s} s:\n{logs.decode(errors='replace')[-3000:]}")
            time.sleep(1)
        yield f"127.0.0.1:{port}"
    finally:
        container.stop()
