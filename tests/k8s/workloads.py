"""The binlake Jobs the cluster tests run (`binlake generate`, `binlake lake verify`), and the lake checked
against the generator's truth once verify passes. Each runs in the given namespace as the chart's pods run:
uid 10001, no privileges, the image never pulled."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from tests.k8s.cluster import ROOT, Cluster
from tests.k8s.lake_truth import differences

SINK_UID: Final = 10001
BOOTSTRAP: Final = {"BINLAKE_KAFKA_BOOTSTRAP_SERVERS": "kafka:9092"}
MANIFESTS: Final = ROOT / "deploy" / "k8s" / "manifests"
# `make images`' images, imported into containerd by the cluster's fixture (never pulled).
NORMALIZER_IMAGE: Final = os.environ.get("BINLAKE_NORMALIZER_IMAGE", "localhost/binlake-normalizer:dev")
SINK_IMAGE: Final = os.environ.get("BINLAKE_SINK_IMAGE", "localhost/binlake-sink:dev")
KAFKA_IMAGE: Final = os.environ.get("BINLAKE_KAFKA_IMAGE", "localhost/binlake-kafka:4.2.0")


def apply_kafka(cluster: Cluster, namespace: str) -> None:
    """The one-node Kafka of deploy/k8s/manifests/kafka.yaml in ``namespace`` (not waited for)."""
    kafka = (MANIFESTS / "kafka.yaml").read_text().replace("image: IMAGE", f"image: {KAFKA_IMAGE}")
    cluster.kubectl("-n", namespace, "apply", "-f", "-", stdin=kafka)


def describe(cluster: Cluster, namespace: str) -> str:
    """The namespace's pods and its latest events, for a failure's message."""
    pods = cluster.kubectl("-n", namespace, "get", "pods", "-o", "wide", check=False).stdout
    events = cluster.kubectl("-n", namespace, "get", "events", "--sort-by=.lastTimestamp", check=False).stdout
    return f"{pods}\n{events[-4000:]}"


def one_pod_job(namespace: str, name: str, pod: dict[str, Any]) -> dict[str, Any]:
    """A Job running ``pod`` (a pod spec) once: no retry, no restart."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"backoffLimit": 0, "template": {"spec": {"restartPolicy": "Never", **pod}}},
    }


def job(
    namespace: str, name: str, image: str, args: list[str], env: dict[str, str], *, volumes: list[Any] | None = None
) -> str:
    """A one-pod Job running ``binlake ARGS`` (the images' entrypoint)."""
    mounts = [{"name": v["name"], "mountPath": v["mountPath"]} for v in volumes or []]
    pod = {
        "securityContext": {"runAsUser": SINK_UID, "runAsGroup": SINK_UID, "runAsNonRoot": True},
        "containers": [
            {
                "name": name,
                "image": image,
                "imagePullPolicy": "Never",
                "args": args,
                "env": [{"name": k, "value": v} for k, v in env.items()],
                "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}},
                "securityContext": {"allowPrivilegeEscalation": False},
                "volumeMounts": mounts,
            }
        ],
        "volumes": [{k: v for k, v in vol.items() if k != "mountPath"} for vol in volumes or []],
    }
    return json.dumps(one_pod_job(namespace, name, pod))


def run_job(cluster: Cluster, namespace: str, name: str, manifest: str, timeout_s: int) -> tuple[bool, str]:
    """Runs the Job to its end (``manifest`` empty: waits for the one already started): whether it succeeded,
    and its log."""
    if manifest:
        cluster.kubectl("-n", namespace, "delete", "job", name, "--ignore-not-found", "--wait=true")
        cluster.kubectl("apply", "-f", "-", stdin=manifest)
    deadline = time.monotonic() + timeout_s
    while True:
        status = json.loads(cluster.kubectl("-n", namespace, "get", "job", name, "-o", "json").stdout)["status"]
        if status.get("succeeded") or status.get("failed"):
            break
        assert time.monotonic() < deadline, f"job {name} still runs after {timeout_s} s"
        time.sleep(3)
    log = cluster.kubectl("-n", namespace, "logs", f"job/{name}", "--tail=200", check=False).stdout
    return bool(status.get("succeeded")), log


def generate(namespace: str, image: str, database: str, events: int) -> str:
    """`binlake generate` of ``events`` canal-json changes of ``database`` into canal.orders."""
    args = ["generate", "--format", "canal-json", "--topic", "canal.orders", "--events", str(events)]
    return job(namespace, f"generate-{database}", image, [*args, "--database", database], BOOTSTRAP)


def lake_equals_topic_and_truth(
    cluster: Cluster,
    namespace: str,
    *,
    image: str,
    lake: dict[str, str],
    lake_on_node: Path,
    expected: dict[str, dict[int, Any]],
    volumes: list[Any] | None = None,
    sink_alive: Callable[[], None] = lambda: None,
) -> str:
    """`binlake lake verify` as a Job (``lake``: its BINLAKE_SINK_* settings) until it passes (the sink catches
        up), then the mirrors, read where they lie on this machine, against the truth until equal (a mirror trails
        the changelog by its trigger); the verify Job's last log. ``sink_alive`` raises when the sink is gone for good
    (it is asked between tries)."""
    env = {
        **BOOTSTRAP,
        "BINLAKE_SINK_TOPIC": "binlake.events",
        "BINLAKE_SINK_MASTER": "local[1]",
        "BINLAKE_SINK_LOG_LEVEL": "WARN",
        **lake,
    }
    verify = job(namespace, "lake-verify", image, ["lake", "verify"], env, volumes=volumes)
    deadline = time.monotonic() + 1200
    while not (outcome := run_job(cluster, namespace, "lake-verify", verify, 900))[0]:
        assert time.monotonic() < deadline, outcome[1]
        sink_alive()
        time.sleep(15)
    deadline = time.monotonic() + 300
    while found := differences(lake_on_node, expected):
        assert time.monotonic() < deadline, found
        time.sleep(10)
    return outcome[1]
