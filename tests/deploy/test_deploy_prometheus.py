"""A real Prometheus server (Debian's) scrapes a running normalizer and sink; every dashboard and alert
expression evaluates, every binlake metric they read is exported, and no alert fires on the healthy pair.

The normalizer and the sink run as processes (``binlake normalizer``, ``binlake sink``) on the test
session's broker with a little traffic; Prometheus scrapes them every second with the job names and
labels of deploy/prometheus/prometheus.yml and loads deploy/prometheus/alerts.yml. Grafana's variables
are replaced by what they select (every job, format, instance; a one-minute rate window).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest
import yaml

from binlake.shared.devbroker.broker import free_port
from tests.deploy.deployment_files import ALERTS, DASHBOARDS
from tests.deploy.tools import tool
from tests.support import kafka_tools
from tests.support.pipeline import Topics, send_workload

pytestmark = [pytest.mark.integration, pytest.mark.system, pytest.mark.xdist_group("system")]

GRAFANA_VARIABLES: Final = {"$__rate_interval": "1m", "$job": ".*", "$format": ".*", "$instance": ".*"}
METRIC: Final = re.compile(r"\b(binlake_[a-z0-9_]+)")
# Exported only once something happens that this run's traffic does not do (a dead letter, an abort, a
# broker error, a rejoin, a quarantined record, a control message such as DDL, an event filtered out by
# BINLAKE_INCLUDE/EXCLUDE_TABLES): labelled series appear with their first event.
ON_EVENT_ONLY: Final = re.compile(
    r"binlake_(dead_letters|transaction_aborts|broker_errors|rejoins|producer_replacements|refused"
    r"|sink_quarantine|control_messages|filtered_events)"
)


def expressions() -> dict[str, str]:
    """Every PromQL expression of the alerts and the dashboards, by where it comes from."""
    found: dict[str, str] = {}
    for group in yaml.safe_load(ALERTS.read_text("utf-8"))["groups"]:
        for rule in group["rules"]:
            found[f"alert {rule['alert']}"] = rule["expr"]

    def walk(board: str, panel: dict[str, Any]) -> None:
        for target in panel.get("targets", []):
            if target.get("expr"):
                found[f"{board}: {panel.get('title')} {target.get('refId', '')}"] = target["expr"]
        for inner in panel.get("panels", []):
            walk(board, inner)

    for path in sorted(DASHBOARDS.glob("*.json")):
        board = json.loads(path.read_text("utf-8"))
        for panel in board["panels"]:
            walk(path.name, panel)
        for variable in board.get("templating", {}).get("list", []):
            query = variable.get("query")
            text = query.get("query") if isinstance(query, dict) else None
            match = re.fullmatch(r"label_values\((.*), *\w+\)", text or "")
            if match:
                found[f"{path.name}: variable {variable['name']}"] = match.group(1)
    for name, expr in found.items():
        for variable, value in GRAFANA_VARIABLES.items():
            expr = expr.replace(variable, value)
        found[name] = expr
    return found


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return json.loads(answer.read())


def _query(base: str, expr: str) -> Any:
    return _get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr}))


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def running_pair(kafka_bootstrap: str, tmp_path: Path) -> Iterator[tuple[int, int]]:
    """A normalizer and a sink running on the broker; their metrics ports."""
    topics = Topics.fresh("prom")
    base = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    base.update({"BINLAKE_KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap})
    normalizer_port, sink_port = free_port(), free_port()
    normalizer_env = dict(
        base,
        BINLAKE_FORMAT="canal-json",
        BINLAKE_INPUT_TOPICS=topics.vendor,
        BINLAKE_OUTPUT_TOPIC=topics.events,
        BINLAKE_DLQ_TOPIC=topics.dlq,
        BINLAKE_GROUP_ID=f"{topics.group}-prom",
        BINLAKE_METRICS_PORT=str(normalizer_port),
    )
    sink_env = dict(
        base,
        BINLAKE_SINK_TOPIC=topics.events,
        BINLAKE_SINK_LAKE_URI=str(tmp_path / "lake"),
        BINLAKE_SINK_MASTER="local[2]",
        BINLAKE_SINK_SHUFFLE_PARTITIONS="2",
        BINLAKE_SINK_TRIGGER_INTERVAL_S="1",
        BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S="2",
        BINLAKE_SINK_LOG_LEVEL="ERROR",
        BINLAKE_SINK_METRICS_PORT=str(sink_port),
    )
    if "BINLAKE_SINK_SPARK_IVY_DIR" in os.environ:
        sink_env["BINLAKE_SINK_SPARK_IVY_DIR"] = os.environ["BINLAKE_SINK_SPARK_IVY_DIR"]
    import asyncio

    async def prepare() -> None:
        await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
        await send_workload(kafka_bootstrap, "canal-json", topics, events=200, seed=3, zone_name="UTC")

    asyncio.run(prepare())
    binlake = [sys.executable, "-m", "binlake.shared.cli.main"]
    normalizer = _start([*binlake, "normalizer"], normalizer_env, tmp_path / "normalizer.log")
    sink = _start([*binlake, "sink"], sink_env, tmp_path / "sink.log")
    try:
        yield normalizer_port, sink_port
    finally:
        _stop(normalizer)
        _stop(sink)


def test_prometheus_scrapes_both_and_every_expression_evaluates(running_pair: tuple[int, int], tmp_path: Path) -> None:
    prometheus = tool("prometheus")
    normalizer_port, sink_port = running_pair
    shutil.copy(ALERTS, tmp_path / "alerts.yml")
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": ["alerts.yml"],
        "scrape_configs": [
            {
                "job_name": "binlake-normalizer",
                "static_configs": [{"targets": [f"127.0.0.1:{normalizer_port}"], "labels": {"format": "canal-json"}}],
            },
            {"job_name": "binlake-sink", "static_configs": [{"targets": [f"127.0.0.1:{sink_port}"]}]},
        ],
    }
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config), "utf-8")
    port = free_port()
    server = _start(
        [
            prometheus,
            f"--config.file={tmp_path / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp_path / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        dict(os.environ),
        tmp_path / "prometheus.log",
    )
    base = f"http://127.0.0.1:{port}"
    try:
        # Both targets up, and the sink past its first committed batch (its metrics all exist then).
        deadline = time.monotonic() + 600
        while True:
            assert server.poll() is None, (tmp_path / "prometheus.log").read_text()[-3000:]
            try:
                up = _query(base, 'min(up{job=~"binlake-.*"}) * count(up{job=~"binlake-.*"})')["data"]["result"]
                batches = _query(base, "sum(binlake_sink_batches_total)")["data"]["result"]
            except OSError:
                up, batches = [], []
            if up and float(up[0]["value"][1]) == 2 and batches and float(batches[0]["value"][1]) > 0:
                break
            assert time.monotonic() < deadline, "targets not up: " + json.dumps(_get(f"{base}/api/v1/targets"))
            time.sleep(2)
        time.sleep(5)  # a few more scrapes for the rates
        exported = {
            sample["metric"]["__name__"] for sample in _query(base, '{__name__=~"binlake_.+"}')["data"]["result"]
        }
        failures = []
        for name, expr in expressions().items():
            answer = _query(base, expr)
            if answer["status"] != "success":
                failures.append(f"{name}: {answer}")
            for metric in METRIC.findall(expr):
                if metric not in exported and not ON_EVENT_ONLY.match(metric):
                    failures.append(f"{name}: {metric} is not exported")
        assert not failures, "\n".join(failures)
        firing = _query(base, 'ALERTS{alertstate="firing"}')["data"]["result"]
        assert not firing, firing
    finally:
        _stop(server)
