"""The deployment files the tests/deploy checks read, and the settings every BINLAKE_* variable must belong to."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic_settings import BaseSettings

from binlake.shared.config.settings import KafkaSettings, NormalizerSettings
from binlake.spark_sink.settings import SinkSettings

REPO: Final = Path(__file__).resolve().parents[2]
COMPOSE: Final = REPO / "docker-compose.yml"
DOCKERFILE: Final = REPO / "deploy" / "Dockerfile"
PROMETHEUS: Final = REPO / "deploy" / "prometheus" / "prometheus.yml"
ALERTS: Final = REPO / "deploy" / "prometheus" / "alerts.yml"
DASHBOARDS: Final = REPO / "deploy" / "grafana" / "dashboards"
CHART: Final = REPO / "helm" / "binlake"
KAFKA_POM: Final = REPO / "deploy" / "kafka" / "pom.xml"

SETTINGS: Final[tuple[type[BaseSettings], ...]] = (KafkaSettings, NormalizerSettings, SinkSettings)


def load_yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text("utf-8"))


def settings_variables() -> set[str]:
    """Every BINLAKE_* name a settings class reads."""
    names: set[str] = set()
    for model in SETTINGS:
        prefix = str(model.model_config.get("env_prefix", ""))
        names |= {f"{prefix}{field}".upper() for field in model.model_fields}
    return names


BINLAKE_NAME: Final = re.compile(r"\bBINLAKE_[A-Z0-9_]+\b")


def dev_broker_kafka_version() -> str:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    version = ET.parse(KAFKA_POM).getroot().find("m:properties/m:kafka.version", ns)
    assert version is not None and version.text
    return version.text
