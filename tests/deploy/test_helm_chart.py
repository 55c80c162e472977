"""The Helm chart, rendered by a real helm: lint, the values schema, the sink both ways, the extras (issue 18)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from binlake.spark_sink import jvm
from binlake.spark_sink.settings import DEFAULT_EXCLUDES, DEFAULT_PACKAGES
from tests.deploy.deployment_files import ALERTS, BINLAKE_NAME, CHART, DASHBOARDS, DOCKERFILE, settings_variables
from tests.deploy.tools import run, tool

pytestmark = [pytest.mark.unit, pytest.mark.deploy]

FULL = CHART / "ci" / "full-values.yaml"
SPARK_OPERATOR = CHART / "ci" / "spark-operator-values.yaml"


def render(*args: str) -> list[dict[str, Any]]:
    out = run(tool("helm"), "template", "binlake", str(CHART), "--namespace", "cdc", *args).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [doc for doc in docs if doc["kind"] == kind]


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [doc for doc in by_kind(docs, kind) if name is None or doc["metadata"]["name"] == name]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''}"
    return found[0]


def env_of(container: dict[str, Any]) -> dict[str, Any]:
    return {item["name"]: item.get("value", item.get("valueFrom")) for item in container.get("env", [])}


@pytest.mark.parametrize("values", [[], ["-f", str(FULL)], ["-f", str(SPARK_OPERATOR)]], ids=["default", "full", "op"])
def test_lint_strict(values: list[str]) -> None:
    run(tool("helm"), "lint", "--strict", str(CHART), *values)


@pytest.mark.parametrize(
    "typo",
    [
        "replica=2",
        "serviceMonitor.enable=true",
        "normalizers.canal.replica=2",
        "sink.mode=spark",
        # The writers without Spark are gone (issue #46): their options are refused, not ignored.
        "sink.changelogWriter=python",
        "sink.mirrorWriter=python",
    ],
)
def test_the_values_schema_refuses_typos(typo: str) -> None:
    done = run(tool("helm"), "lint", "--strict", str(CHART), "--set", typo, check=False)
    assert done.returncode != 0, f"--set {typo} passed helm lint"
    assert "schema" in (done.stdout + done.stderr).lower()


def test_normalizers_are_a_map_and_replicas_zero_is_kept() -> None:
    docs = render("--set", "normalizers.canal.replicas=3", "-f", str(FULL))
    canal = one(docs, "Deployment", "binlake-canal")
    assert canal["spec"]["replicas"] == 3
    assert one(docs, "Deployment", "binlake-dbz")["spec"]["replicas"] == 0
    # A disruption budget where a drain could take more than one pod; spread over nodes.
    assert [pdb["metadata"]["name"] for pdb in by_kind(docs, "PodDisruptionBudget")] == ["binlake-canal"]
    spread = canal["spec"]["template"]["spec"]["topologySpreadConstraints"]
    assert {c["topologyKey"] for c in spread} == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    assert render("--set", "normalizers.canal=null", "--set", "sink.enabled=false") == [
        doc
        for doc in render("--set", "normalizers.canal=null", "--set", "sink.enabled=false")
        if doc["kind"] != "Deployment"
    ]


def test_sink_local_mode_is_a_statefulset_with_a_volume_probes_and_a_metrics_service() -> None:
    docs = render()
    sink = one(docs, "StatefulSet", "binlake-sink")
    assert sink["spec"]["replicas"] == 1
    pod = sink["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["containers"]] == ["sink"]  # both queries in one Spark application
    container = pod["containers"][0]
    assert container["args"] == ["sink"]
    assert container["image"] == "binlake-sink:0.1.0"
    assert container["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    env = env_of(container)
    assert env["BINLAKE_SINK_LAKE_URI"].startswith("/var/lib/binlake/")
    assert env["BINLAKE_SINK_CHECKPOINT_URI"].startswith("/var/lib/binlake/")
    assert env["BINLAKE_SINK_METRICS_HOST"] == "0.0.0.0"
    assert {"name": "data", "mountPath": "/var/lib/binlake"} in container["volumeMounts"]
    assert sink["spec"]["volumeClaimTemplates"][0]["metadata"]["name"] == "data"
    service = one(docs, "Service", "binlake-sink")
    assert service["spec"]["ports"][0]["port"] == 9109
    assert service["metadata"]["labels"]["binlake.io/job"] == "binlake-sink"
    assert one(docs, "Deployment", "binlake-canal")["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "binlake-normalizer:0.1.0"
    )


def test_sink_on_an_object_store_takes_credentials_from_a_secret() -> None:
    docs = render("-f", str(FULL))
    container = one(docs, "StatefulSet")["spec"]["template"]["spec"]["containers"][0]
    env = env_of(container)
    assert env["BINLAKE_SINK_LAKE_URI"] == "s3a://lake/binlake"
    assert env["AWS_ACCESS_KEY_ID"] == {"secretKeyRef": {"name": "binlake-s3", "key": "access-key"}}
    conf = yaml.safe_load(env["BINLAKE_SINK_SPARK_CONF"])
    assert conf["spark.hadoop.fs.s3a.endpoint"] == "http://minio.storage:9000"
    assert conf["spark.hadoop.fs.s3a.path.style.access"] == "true"
    assert conf["spark.driver.memory"] == "3g"
    # The Kafka credentials given in values become a Secret the pods read.
    secrets = {doc["metadata"]["name"]: doc for doc in by_kind(docs, "Secret")}
    assert set(secrets) == {"binlake-kafka-sasl", "binlake-kafka-tls"}
    assert env["BINLAKE_KAFKA_SASL_PASSWORD"] == {"secretKeyRef": {"name": "binlake-kafka-sasl", "key": "password"}}
    assert env["BINLAKE_KAFKA_SSL_CAFILE"] == "/etc/binlake/kafka-tls/ca.crt"


def test_sink_spark_operator_mode_is_a_spark_application() -> None:
    docs = render("-f", str(SPARK_OPERATOR))
    assert not by_kind(docs, "StatefulSet")
    app = one(docs, "SparkApplication")
    assert app["apiVersion"] == "sparkoperator.k8s.io/v1beta2"
    spec = app["spec"]
    assert spec["type"] == "Python" and spec["mode"] == "cluster"
    assert spec["mainApplicationFile"] == "local:///opt/binlake/deploy/sink_main.py"
    assert spec["executor"]["instances"] == 4
    env = env_of(spec["driver"])
    assert env["BINLAKE_SINK_MASTER"].startswith("k8s://")
    assert env["BINLAKE_SINK_LAKE_URI"] == "s3a://lake/binlake"
    # The metrics Service selects the driver.
    assert one(docs, "Service", "binlake-sink")["spec"]["selector"]["spark-role"] == "driver"


def test_spark_operator_packages_are_the_sinks_and_the_images() -> None:
    """spark-submit resolves the packages before the sink's Python runs: the chart lists what the sink would."""
    app = one(render("-f", str(SPARK_OPERATOR)), "SparkApplication")
    conf = app["spec"]["sparkConf"]
    cloud = re.search(r"(?m)^ARG SINK_CLOUD_PACKAGES=(\S+)$", DOCKERFILE.read_text("utf-8"))
    assert cloud is not None
    assert conf["spark.jars.packages"].split(",") == [*DEFAULT_PACKAGES, *cloud.group(1).split(",")]
    assert conf.get("spark.jars.excludes", "").split(",") == list(DEFAULT_EXCLUDES or [""])
    assert conf["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    # The driver and the executors decode events with binlake's jar, from the image's installed package.
    own = f"binlake/spark_sink/jvm/{jvm.JAR.name}"
    assert any(jar.endswith(f"/site-packages/{own}") for jar in conf["spark.jars"].split(",")), conf["spark.jars"]


def test_spark_operator_mode_needs_an_object_store() -> None:
    done = run(tool("helm"), "template", "x", str(CHART), "--set", "sink.mode=spark-operator", check=False)
    assert done.returncode != 0 and "sink.lake.uri" in done.stderr


def test_prometheus_rule_carries_the_shipped_alerts() -> None:
    rule = one(render("-f", str(FULL)), "PrometheusRule")
    shipped = yaml.safe_load(ALERTS.read_text("utf-8"))
    assert rule["spec"] == shipped


def test_dashboards_config_map_for_the_grafana_sidecar() -> None:
    config_map = one(render("-f", str(FULL)), "ConfigMap", "binlake-dashboards")
    assert config_map["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert set(config_map["data"]) == {path.name for path in DASHBOARDS.glob("*.json")}
    for path in DASHBOARDS.glob("*.json"):
        assert config_map["data"][path.name] == path.read_text("utf-8").rstrip("\n")


def test_helm_test_hook_asks_every_readyz() -> None:
    docs = render("-f", str(FULL))
    pod = one(docs, "Pod", "binlake-test-readyz")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    urls = pod["spec"]["containers"][0]["args"][1:]
    # The stopped normalizer (replicas 0) is not asked.
    assert urls == ["http://binlake-canal:9108/readyz", "http://binlake-sink:9109/readyz"]


def test_the_topics_job_creates_replicated_topics_only_when_asked() -> None:
    assert not by_kind(render(), "Job")
    job = one(render("-f", str(FULL)), "Job", "binlake-topics")
    # After the chart's Kafka Secrets exist; re-run (creating what is missing) at every upgrade.
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "post-install,post-upgrade"
    pod = job["spec"]["template"]["spec"]
    assert pod["restartPolicy"] == "Never"
    (topics,) = pod["initContainers"]
    (letters,) = pod["containers"]
    replicated = ["--partitions", "6", "--replication-factor", "3", "--min-insync-replicas", "2"]
    # The unified topic and every input topic of every normalizer, the stopped one's too.
    assert topics["args"] == [
        "topics",
        "create",
        "binlake.events",
        "canal.orders",
        "canal.users",
        "dbz.shop.orders",
        *replicated,
    ]
    assert letters["args"] == ["topics", "create", "binlake.dlq:1", *replicated, "--config", "retention.ms=2592000000"]
    for container in (topics, letters):
        assert container["image"] == "registry.example.com/binlake-normalizer:0.1.0"
        env = env_of(container)
        assert env["BINLAKE_KAFKA_SECURITY_PROTOCOL"] == "SASL_SSL"
        assert env["BINLAKE_KAFKA_SASL_PASSWORD"] == {"secretKeyRef": {"name": "binlake-kafka-sasl", "key": "password"}}
        assert container["volumeMounts"] == [
            {"name": "kafka-tls", "mountPath": "/etc/binlake/kafka-tls", "readOnly": True}
        ]
    without_inputs = one(render("--set", "topics.create=true"), "Job")["spec"]["template"]["spec"]
    assert without_inputs["initContainers"][0]["args"][2:3] == ["binlake.events"]
    assert without_inputs["initContainers"][0]["args"][3] == "--partitions"


def test_the_topics_job_refuses_a_min_insync_above_the_replicas() -> None:
    done = run(
        tool("helm"),
        "template",
        "x",
        str(CHART),
        "--set",
        "topics.create=true",
        "--set",
        "topics.minInsyncReplicas=4",
        check=False,
    )
    assert done.returncode != 0 and "every acks=all write would fail" in done.stderr


def test_service_monitor_scrapes_normalizers_and_sink() -> None:
    monitor = one(render("-f", str(FULL)), "ServiceMonitor")
    expression = monitor["spec"]["selector"]["matchExpressions"][0]
    assert expression["values"] == ["normalizer", "sink"]
    assert monitor["spec"]["jobLabel"] == "binlake.io/job"


@pytest.mark.parametrize("values", [[], ["-f", str(FULL)], ["-f", str(SPARK_OPERATOR)]], ids=["default", "full", "op"])
def test_every_binlake_variable_of_the_chart_is_read_by_settings(values: list[str]) -> None:
    known = settings_variables()
    rendered = run(tool("helm"), "template", "binlake", str(CHART), *values).stdout
    names = set(BINLAKE_NAME.findall(rendered))
    assert names, "no BINLAKE_ variable rendered"
    assert not names - known, f"read by no settings class: {sorted(names - known)}"
