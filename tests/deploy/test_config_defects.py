"""Configuration defects found while deploying (issue 18): each fails on the code before its fix.

- ``binlake config example`` is an env file that loads as it is (``docker run --env-file``,
  compose ``env_file``, python-dotenv): no empty integers, no comment read as a value;
- the sink's Ivy cache is read from its one documented name, BINLAKE_SINK_SPARK_IVY_DIR;
- the normalizer logs its stop on SIGTERM.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from dotenv import dotenv_values

from binlake.shared.cli.config import example
from binlake.shared.config.settings import KafkaSettings, NormalizerSettings, load
from binlake.shared.errors import ConfigError
from binlake.spark_sink.settings import SinkSettings

pytestmark = [pytest.mark.unit, pytest.mark.deploy]


def docker_env_file(text: str) -> dict[str, str]:
    """What ``docker run --env-file`` sets: ``NAME=value`` taken literally, ``#`` lines and blank lines skipped."""
    values: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.lstrip()
        if not stripped or stripped.startswith("#"):
            continue
        name, _, value = stripped.partition("=")
        values[name] = value
    return values


def _only(monkeypatch: pytest.MonkeyPatch, values: dict[str, str]) -> None:
    for name in list(os.environ):
        if name.startswith("BINLAKE_") or name == "SPARK_IVY_DIR":
            monkeypatch.delenv(name)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


@pytest.mark.parametrize("reader", ["docker", "dotenv"])
def test_config_example_loads_as_an_env_file(reader: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = example()
    if reader == "docker":
        values = docker_env_file(text)
    else:
        path = tmp_path / "binlake.env"
        path.write_text(text, "utf-8")
        values = {name: value or "" for name, value in dotenv_values(path).items()}
    _only(monkeypatch, values)
    kafka = load(KafkaSettings)
    normalizer = load(NormalizerSettings)
    sink = load(SinkSettings)
    assert normalizer.format == "canal-json"
    assert normalizer.input_topics == ["canal.orders"]
    # Every value the file sets is the default it documents.
    _only(monkeypatch, {})
    assert kafka == KafkaSettings()
    assert normalizer == NormalizerSettings(format="canal-json", input_topics=["canal.orders"])
    assert sink == SinkSettings()


def test_ivy_dir_is_read_from_its_documented_name(monkeypatch: pytest.MonkeyPatch) -> None:
    _only(monkeypatch, {"BINLAKE_SINK_SPARK_IVY_DIR": "/cache/ivy", "SPARK_IVY_DIR": "/elsewhere"})
    assert load(SinkSettings).spark_ivy_dir == "/cache/ivy"
    _only(monkeypatch, {"SPARK_IVY_DIR": "/elsewhere"})
    assert load(SinkSettings).spark_ivy_dir == "~/.cache/binlake/ivy"
    doc = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text("utf-8")
    assert "`BINLAKE_SINK_SPARK_IVY_DIR`" in doc


def test_the_old_ivy_dir_name_is_refused_not_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    _only(monkeypatch, {"BINLAKE_SPARK_IVY_DIR": "/cache/ivy"})
    with pytest.raises(ConfigError, match="BINLAKE_SINK_SPARK_IVY_DIR"):
        load(SinkSettings)


def _lines(output: bytes) -> list[dict[str, object]]:
    found = []
    for line in output.decode("utf-8", "replace").splitlines():
        if line.startswith("{"):
            found.append(orjson.loads(line))
    return found


def test_normalizer_logs_its_stop_on_sigterm() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env.update(
        {
            "BINLAKE_FORMAT": "canal-json",
            "BINLAKE_INPUT_TOPICS": "canal.orders",
            "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",  # refused: the broker back-off, no broker needed
            "BINLAKE_METRICS_PORT": "0",
            "BINLAKE_LOG_LEVEL": "INFO",
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "binlake.shared.cli.main", "normalizer"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 60
        started = b""
        while b"normalizer starting" not in started and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            started += line
        assert b"normalizer starting" in started, started.decode()
        process.send_signal(signal.SIGTERM)
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, rest.decode()
    messages = {str(entry["msg"]): entry for entry in _lines(rest)}
    assert messages["normalizer stopping"]["signal"] == "SIGTERM"
    assert "normalizer stopped" in messages
