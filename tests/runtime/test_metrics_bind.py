"""Where the metrics/health servers listen: 127.0.0.1 unless told; the chart and compose say 0.0.0.0."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.shared.config.settings import NormalizerSettings
from binlake.spark_sink.settings import SinkSettings

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def test_the_servers_bind_this_host_only_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("BINLAKE_METRICS_HOST", "BINLAKE_SINK_METRICS_HOST"):
        monkeypatch.delenv(name, raising=False)
    normalizer = NormalizerSettings.model_validate({"format": "canal-json", "input_topics": ["t"]})
    assert normalizer.metrics_host == "127.0.0.1"
    assert SinkSettings().metrics_host == "127.0.0.1"


def test_the_chart_and_compose_bind_every_interface() -> None:
    """Their probes and Prometheus come from outside the container: they set 0.0.0.0 themselves."""
    helpers = (REPO / "helm" / "binlake" / "templates" / "_helpers.tpl").read_text()
    assert '"BINLAKE_METRICS_HOST" "0.0.0.0"' in helpers
    compose = (REPO / "docker-compose.yml").read_text()
    service = compose.split("\n  normalizer-canal:\n", 1)[1].split("\n  prometheus:\n", 1)[0]
    assert "BINLAKE_METRICS_HOST: 0.0.0.0" in service
