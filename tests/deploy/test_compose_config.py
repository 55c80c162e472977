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
