"""The integration tests' Kafka broker: one per test session.

By default the project's own embedded broker (``binlake dev broker``: Apache
Kafka jars from Maven Central, KRaft). With ``BINLAKE_TESTCONTAINERS=1`` and a
Docker engine, a Testcontainers Kafka instead. Outside CI, a machine that can
run neither skips these tests; in CI (``CI=true``) that is a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from binlake.shared.devbroker import broker


def _docker_available() -> bool:
    # A Docker engine's socket, or another engine's Docker API (podman system service) named by DOCKER_HOST.
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://"):
        return Path(host.removeprefix("unix://")).exists()
    return Path("/var/run/docker.sock").exists()


def require_broker_tools() -> None:
    """Skip a test that runs the embedded broker (or cluster) where java or mvn is missing; in CI, fail it."""
    if not (shutil.which("java") and shutil.which("mvn")):
        message = "the embedded Kafka broker needs java and mvn on PATH"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


@pytest.fixture(scope="session")
def kafka_bootstrap(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("BINLAKE_TESTCONTAINERS") == "1" and _docker_available():
        from tests.support.kafka_container import kafka_container

        with kafka_container() as bootstrap:
            yield bootstrap
        return
    require_broker_tools()
    run_dir = tmp_path_factory.mktemp("broker")
    try:
        info = broker.start(run_dir, timeout_s=120)
    except broker.BrokerError as exc:
        pytest.fail(f"embedded Kafka broker failed to start: {exc}")
    try:
        yield info.bootstrap
    finally:
        broker.stop(run_dir)
