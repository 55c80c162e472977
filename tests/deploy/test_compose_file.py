"""docker-compose.yml runs the whole pipeline: its services, ports, profiles and settings (issue 18).

The file is read as YAML here; `docker compose config` (a real compose binary, make test-tools) checks
it as compose reads it in test_compose_config.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.deployment_files import (
    BINLAKE_NAME,
    COMPOSE,
    KAFKA_POM,
    PROMETHEUS,
    dev_broker_kafka_version,
    load_yaml,
    settings_variables,
)

pytestmark = [pytest.mark.unit, pytest.mark.deploy]


def services() -> dict[str, Any]:
    loaded: dict[str, Any] = load_yaml(COMPOSE)["services"]
    return loaded


def test_the_stack_runs_the_sink_with_its_volumes() -> None:
    sink = services()["sink"]
    assert sink["command"] == ["sink"]
    assert sink["build"]["target"] == "sink"
    mounts = {volume.split(":")[1] for volume in sink["volumes"]}
    env = sink["environment"]
    assert env["BINLAKE_SINK_LAKE_URI"] in mounts
    checkpoint_root = env["BINLAKE_SINK_CHECKPOINT_URI"].rsplit("/", 1)[0]
    assert checkpoint_root in mounts
    assert env["BINLAKE_SINK_MIRROR_CHECKPOINT_URI"].startswith(checkpoint_root)
    assert "/opt/binlake/ivy" in mounts, "the Ivy cache (seeded from the image) is a volume"
    assert env["BINLAKE_SINK_METRICS_HOST"] == "0.0.0.0"
    assert "/readyz" in " ".join(sink["healthcheck"]["test"])


def test_normalizers_use_the_image_without_spark() -> None:
    for name, service in services().items():
        if service.get("command") == ["normalizer"]:
            assert service["build"]["target"] == "normalizer", name


def test_one_shot_tools_sit_behind_profiles() -> None:
    for name in ("generator", "demo", "lake-verify", "lake-show"):
        assert services()[name].get("profiles"), name


def test_published_ports_are_bound_to_loopback() -> None:
    for name, service in services().items():
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"


def test_the_broker_runs_the_dev_brokers_kafka() -> None:
    image = load_yaml(COMPOSE)["x-kafka-image"]["image"]
    assert image.endswith(f":-apache/kafka:{dev_broker_kafka_version()}}}"), image


def test_every_binlake_variable_a_service_gets_is_read_by_settings() -> None:
    known = settings_variables()
    for name, service in services().items():
        environment = service.get("environment", {})
        unknown = sorted(key for key in environment if BINLAKE_NAME.fullmatch(key) and key not in known)
        assert not unknown, f"{name}: {unknown} are read by no settings class"


def test_prometheus_scrapes_services_that_exist() -> None:
    compose = services()
    config = load_yaml(PROMETHEUS)
    jobs = {job["job_name"]: job for job in config["scrape_configs"]}
    assert {"binlake-normalizer", "binlake-sink"} <= set(jobs)
    for job in ("binlake-normalizer", "binlake-sink"):
        for static in jobs[job]["static_configs"]:
            for target in static["targets"]:
                host, port = target.split(":")
                assert host in compose, f"{job} scrapes {target}: no such service"
                env = compose[host]["environment"]
                assert port in {str(env.get("BINLAKE_METRICS_PORT")), str(env.get("BINLAKE_SINK_METRICS_PORT"))}
    # No Alertmanager runs in the development stack: no target that cannot exist.
    assert "alerting" not in config


def test_the_local_kafka_image_builds_the_dev_brokers_kafka() -> None:
    """deploy/podman/kafka/pom.xml (the Kafka image where no registry serves apache/kafka) pins the same release."""
    pom = KAFKA_POM.parent.parent / "podman" / "kafka" / "pom.xml"
    assert f"<kafka.version>{dev_broker_kafka_version()}</kafka.version>" in pom.read_text("utf-8")
