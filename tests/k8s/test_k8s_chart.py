"""`helm install binlake helm/binlake` on the single-node cluster (make test-k8s), with an in-cluster Kafka
(deploy/k8s/manifests/kafka.yaml): the chart's topics Job makes the topics, the normalizer (a Deployment) and
the sink (a StatefulSet, sink.mode=local, its checkpoints and lake on a volume owned by uid 10001) come up
with their probes passing, traffic from `binlake generate` runs as a Job, and `binlake lake verify`, as a Job
on the sink's volume, finds the lake equal to the unified topic, and its mirrors equal the generator's truth
(lake_truth.py). A real Prometheus on the node (tests/k8s/prometheus.py) discovers the pods by their
annotations through the API server and scrapes them up, and `helm test` passes. Then the faults: a
normalizer pod deleted mid-stream, the sink's pod killed mid-batch (the StatefulSet brings it back on its
volume), and a `helm upgrade` that changes a setting (a rolling restart of both): nothing lost or doubled.

The images are `make images`' (localhost/binlake-normalizer, -sink, -kafka), imported into
containerd by the cluster's fixture (BINLAKE_K8S_IMAGES); the chart never pulls (image.pullPolicy Never).
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from tests.deploy.tools import tool
from tests.k8s.cluster import ROOT, Cluster
from tests.k8s.lake_truth import truth
from tests.k8s.prometheus import Prometheus, running_prometheus
from tests.k8s.workloads import (
    NORMALIZER_IMAGE,
    SINK_IMAGE,
    SINK_UID,
    apply_kafka,
    describe,
    generate,
    lake_equals_topic_and_truth,
    run_job,
)

pytestmark = [pytest.mark.integration]

NAMESPACE: Final = "binlake"
RELEASE: Final = "binlake"
VALUES: Final = Path(__file__).with_name("values.yaml")
EVENTS: Final = 3000
FAULT_EVENTS: Final = 40000


def _sink_volume(cluster: Cluster) -> None:
    """The sink's PersistentVolume: a folder of the run, owned by the pods' uid. A node's folder (hostPath)
    gets no fsGroup ownership from the kubelet, as a provisioner's volume would: it is made so here."""
    folder = cluster.run / "volumes" / "sink-0"
    folder.mkdir(parents=True)
    os.chown(folder, SINK_UID, SINK_UID)
    folder.chmod(0o770)
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "binlake-sink-0"},
        "spec": {
            "capacity": {"storage": "5Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "hostPath": {"path": str(folder), "type": "Directory"},
        },
    }
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(volume))


def _annotated_pods(cluster: Cluster) -> set[str]:
    """The namespace's running pods whose annotations ask to be scraped: what Prometheus must find."""
    pods = json.loads(cluster.kubectl("-n", NAMESPACE, "get", "pods", "-o", "json").stdout)["items"]
    return {
        pod["metadata"]["name"]
        for pod in pods
        if pod["metadata"].get("annotations", {}).get("prometheus.io/scrape") == "true"
        and pod["status"].get("phase") == "Running"
        and "deletionTimestamp" not in pod["metadata"]
    }


def _scraped(prometheus: Prometheus, expression: str, at_least: float) -> float:
    """``expression``'s value through Prometheus once it reaches ``at_least`` (a scrape or two behind)."""
    deadline = time.monotonic() + 60
    while True:
        found = prometheus.query(expression)
        value = float(found[0]["value"][1]) if found else 0.0
        if value >= at_least:
            return value
        assert time.monotonic() < deadline, f"{expression} = {value} through Prometheus, expected >= {at_least}"
        time.sleep(1)


@pytest.fixture(scope="module")
def release(cluster: Cluster) -> Iterator[Cluster]:
    """Kafka in the cluster, then the chart installed on it, its workloads rolled out."""
    helm = tool("helm")
    cluster.kubectl("create", "namespace", NAMESPACE)
    apply_kafka(cluster, NAMESPACE)
    rollout = cluster.kubectl("-n", NAMESPACE, "rollout", "status", "statefulset/kafka", "--timeout=300s", check=False)
    assert rollout.returncode == 0, cluster.kubectl("-n", NAMESPACE, "describe", "pod", "kafka-0").stdout
    _sink_volume(cluster)
    # No --wait: the topics Job is a post-install hook, which helm runs (and waits for) at once.
    install = cluster.run_tool(
        helm, "install", RELEASE, str(ROOT / "helm" / "binlake"), "-n", NAMESPACE, "-f", str(VALUES), "--timeout", "10m"
    )
    assert install.returncode == 0, install.stdout + install.stderr + _describe(cluster)
    _rolled_out(cluster)
    yield cluster
    # The node's CPU for the next module (test_k8s_spark.py): the release, Kafka and the Jobs go.
    cluster.kubectl("delete", "namespace", NAMESPACE, "--timeout=300s", check=False, timeout=360)


@pytest.fixture(scope="module")
def prometheus(release: Cluster) -> Iterator[Prometheus]:
    """Prometheus discovering the namespace's pods for the module's tests (it sees the faults' pods go and
    come)."""
    with running_prometheus(release, NAMESPACE) as running:
        yield running


def _rolled_out(cluster: Cluster) -> None:
    for workload in ("deployment/binlake-canal", "statefulset/binlake-sink"):
        done = cluster.kubectl("-n", NAMESPACE, "rollout", "status", workload, "--timeout=600s", check=False)
        assert done.returncode == 0, f"{workload} not ready:\n{_describe(cluster)}"


def _generate(database: str, events: int) -> str:
    return generate(NAMESPACE, NORMALIZER_IMAGE, database, events)


def _lake_equals_topic_and_truth(cluster: Cluster, expected: dict[str, dict[int, Any]]) -> str:
    """The lake on the sink's volume, verified by a Job mounting its claim and read on the node."""
    claim = {"claimName": "data-binlake-sink-0"}
    volume = {"name": "data", "mountPath": "/var/lib/binlake", "persistentVolumeClaim": claim}
    lake = {"BINLAKE_SINK_LAKE_URI": "/var/lib/binlake/lake"}
    on_node = cluster.run / "volumes" / "sink-0" / "lake"
    return lake_equals_topic_and_truth(
        cluster, NAMESPACE, image=SINK_IMAGE, lake=lake, lake_on_node=on_node, expected=expected, volumes=[volume]
    )


def test_the_chart_fills_the_lake_with_the_truth(release: Cluster, prometheus: Prometheus) -> None:
    ok, log = run_job(release, NAMESPACE, "generate-shop", _generate("shop", EVENTS), 600)
    assert ok, log
    verified = _lake_equals_topic_and_truth(release, truth("shop", EVENTS))
    assert f"{EVENTS} events" in verified, verified
    # Prometheus finds the normalizer and the sink by their annotations and scrapes both up.
    targets = prometheus.wait_until_up(_annotated_pods(release))
    assert {t["labels"].get("component") for t in targets.values()} >= {"normalizer", "sink"}, targets
    _scraped(prometheus, "sum(binlake_sink_changelog_rows_total)", EVENTS)
    # The chart's own test pod: every normalizer's and the sink's /readyz through their Services' names
    # (CoreDNS, then kube-proxy's rules). Without --logs: the pod's hook-succeeded delete policy removes it
    # before helm could read them ("unable to get pod logs for binlake-test-readyz").
    helm_test = release.run_tool(tool("helm"), "test", RELEASE, "-n", NAMESPACE, "--timeout", "5m")
    assert helm_test.returncode == 0, helm_test.stdout + helm_test.stderr


def test_pod_faults_and_an_upgrade_lose_and_double_nothing(release: Cluster, prometheus: Prometheus) -> None:
    cluster = release
    sink_before = _pod(cluster, "binlake-sink-0")
    # Each pod is deleted once its own counter shows it inside the new traffic (its earlier EVENTS done,
    # FAULT_EVENTS not): the normalizer mid-stream, the sink between its micro-batches' commits.
    cluster.kubectl("apply", "-f", "-", stdin=_generate("shop2", FAULT_EVENTS))
    consumed = _wait_for_metric(cluster, "normalizer", "binlake_consumed_messages_total", EVENTS + 1000)
    # Its open transaction is aborted; its replacement resumes from the committed offsets.
    cluster.kubectl("-n", NAMESPACE, "delete", "pod", "-l", "app.kubernetes.io/component=normalizer", "--wait=false")
    rows = _wait_for_metric(cluster, "sink", "binlake_sink_changelog_rows_total", EVENTS + 1000)
    # Given 5 s instead of its 120 s to stop: the StatefulSet brings it back on its volume.
    cluster.kubectl("-n", NAMESPACE, "delete", "pod", "binlake-sink-0", "--grace-period=5", "--wait=false")
    print(f"deleted the normalizer at {consumed:.0f} messages consumed, the sink at {rows:.0f} changelog rows")
    assert consumed < EVENTS + FAULT_EVENTS and rows < EVENTS + FAULT_EVENTS, "a fault came after the traffic"
    ok, log = run_job(cluster, NAMESPACE, "generate-shop2", "", 900)
    assert ok, log
    time.sleep(5)
    _rolled_out(cluster)
    sink_after = _pod(cluster, "binlake-sink-0")
    assert sink_after["metadata"]["uid"] != sink_before["metadata"]["uid"]
    claims = [
        v["persistentVolumeClaim"]["claimName"] for v in sink_after["spec"]["volumes"] if "persistentVolumeClaim" in v
    ]
    assert claims == ["data-binlake-sink-0"], claims

    # A changed setting: both workloads' pod templates change, so both roll.
    upgrade = cluster.run_tool(
        tool("helm"),
        "upgrade",
        RELEASE,
        str(ROOT / "helm" / "binlake"),
        "-n",
        NAMESPACE,
        "-f",
        str(VALUES),
        "--set",
        "sink.triggerIntervalS=7",
        "--set",
        "batchMaxMs=300",
        "--timeout",
        "10m",
    )
    assert upgrade.returncode == 0, upgrade.stdout + upgrade.stderr + _describe(cluster)
    _rolled_out(cluster)
    assert _pod(cluster, "binlake-sink-0")["metadata"]["uid"] != sink_after["metadata"]["uid"]

    expected = {**truth("shop", EVENTS), **truth("shop2", FAULT_EVENTS)}
    verified = _lake_equals_topic_and_truth(cluster, expected)
    assert f"{EVENTS + FAULT_EVENTS} events" in verified, verified
    # Prometheus dropped the deleted pods and found their replacements, each scraped up; the new sink pod's
    # counter starts after the upgrade, so only that it was scraped is asked.
    targets = prometheus.wait_until_up(_annotated_pods(cluster))
    assert sink_after["metadata"]["name"] in targets, targets
    _scraped(prometheus, 'count(up{job="kubernetes-pods"} == 1)', len(targets))


def _wait_for_metric(cluster: Cluster, component: str, name: str, at_least: float) -> float:
    """The running ``component`` pod's ``name`` (its samples summed, scraped from the node) once it reaches
    ``at_least``."""
    deadline = time.monotonic() + 600
    while True:
        pods = json.loads(
            cluster.kubectl(
                "-n", NAMESPACE, "get", "pods", "-l", f"app.kubernetes.io/component={component}", "-o", "json"
            ).stdout
        )["items"]
        value = 0.0
        for pod in pods:
            ip, port = pod["status"].get("podIP"), pod["metadata"].get("annotations", {}).get("prometheus.io/port")
            if pod["status"].get("phase") != "Running" or not ip or not port:
                continue
            try:
                with urllib.request.urlopen(f"http://{ip}:{port}/metrics", timeout=5) as answer:
                    text = answer.read().decode()
            except OSError:
                continue
            value += sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name))
        if value >= at_least:
            return value
        assert time.monotonic() < deadline, f"{component}'s {name} stayed at {value}"
        time.sleep(0.5)


def _pod(cluster: Cluster, name: str) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads(cluster.kubectl("-n", NAMESPACE, "get", "pod", name, "-o", "json").stdout)
    return pod


def _describe(cluster: Cluster) -> str:
    return f"{describe(cluster, NAMESPACE)}\n{cluster.logs('kubelet', 20)}"
