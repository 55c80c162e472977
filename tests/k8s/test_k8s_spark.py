"""`helm install` with sink.mode=spark-operator on the single-node cluster (make test-k8s): the sink's driver
and executors as pods of the sink image, the lake on an S3 server in the cluster.

The chart renders a SparkApplication, stored by the API server through its CustomResourceDefinition. The
Spark operator that would submit it cannot be had here (spark_submit.py says why); its part, spark-submit in
cluster mode with the application's settings, runs as a Job of the sink image. From there everything is
Spark's and the chart's: the driver pod asks Kubernetes for the executor pods, both run the image's
entrypoint (deploy/sink-entrypoint.sh), the executors run the micro-batches' tasks (a driver in cluster
mode runs none), and the lake and its checkpoints go to versitygw (deploy/k8s/manifests/s3.yaml) through
s3a://, as sink.objectStore.s3 configures it. Traffic from `binlake generate` runs as a Job; `binlake lake
verify`, as a Job reading the lake through S3, finds it equal to the unified topic, and its mirrors, read in
the server's folder on the node, equal the generator's truth.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from tests.deploy.tools import tool
from tests.k8s.cluster import ROOT, Cluster
from tests.k8s.lake_truth import truth
from tests.k8s.spark_submit import SUBMITTER, submitter
from tests.k8s.workloads import (
    MANIFESTS,
    NORMALIZER_IMAGE,
    SINK_IMAGE,
    SINK_UID,
    apply_kafka,
    describe,
    generate,
    lake_equals_topic_and_truth,
    run_job,
)
from tests.support.s3 import ACCESS_KEY, BUCKET, SECRET_KEY, signed_put

pytestmark = [pytest.mark.integration]

NAMESPACE: Final = "binlake-spark"
RELEASE: Final = "binlake"
VALUES: Final = [Path(__file__).with_name("values.yaml"), Path(__file__).with_name("values-spark.yaml")]
S3_IMAGE: Final = os.environ.get("BINLAKE_K8S_S3_IMAGE", "localhost/binlake-s3:dev")
EVENTS: Final = 3000
SERVICE_ACCOUNT: Final = "spark-operator-spark"  # the chart's sink.sparkOperator.serviceAccount
# The operator's CustomResourceDefinition, its schema left open: the chart's SparkApplication is checked against
# the operator's own schema by `make test` (tests/deploy/test_helm_manifests_valid.py).
CRD: Final = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {
        "name": "sparkapplications.sparkoperator.k8s.io",
        # A *.k8s.io group needs this approval annotation; the operator's own CRD carries this value.
        "annotations": {"api-approved.kubernetes.io": "https://github.com/kubeflow/spark-operator/pull/1298"},
    },
    "spec": {
        "group": "sparkoperator.k8s.io",
        "scope": "Namespaced",
        "names": {"kind": "SparkApplication", "plural": "sparkapplications", "singular": "sparkapplication"},
        "versions": [
            {
                "name": "v1beta2",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                "subresources": {"status": {}},
            }
        ],
    },
}
# What the driver's account may do in the namespace: make and remove its executors, their Service and
# ConfigMaps, and (spark-submit, Spark 4.2) the application's NetworkPolicy.
ROLE: Final = {
    "apiVersion": "rbac.authorization.k8s.io/v1",
    "kind": "Role",
    "metadata": {"name": "spark", "namespace": NAMESPACE},
    "rules": [
        {
            "apiGroups": [""],
            "resources": ["pods", "services", "configmaps", "persistentvolumeclaims"],
            "verbs": ["create", "get", "list", "watch", "update", "patch", "delete", "deletecollection"],
        },
        {
            "apiGroups": ["networking.k8s.io"],
            "resources": ["networkpolicies"],
            "verbs": ["create", "get", "list", "watch", "update", "patch", "delete"],
        },
    ],
}


def _apply(cluster: Cluster, *manifests: dict[str, Any] | str) -> None:
    for manifest in manifests:
        text = manifest if isinstance(manifest, str) else json.dumps(manifest)
        cluster.kubectl("-n", NAMESPACE, "apply", "-f", "-", stdin=text)


def _s3_server(cluster: Cluster) -> Path:
    """versitygw in the namespace over a folder of the run (owned by its uid), the bucket made; the folder."""
    folder = cluster.run / "volumes" / "s3"
    folder.mkdir(parents=True)
    os.chown(folder, SINK_UID, SINK_UID)
    cluster.kubectl(
        "-n",
        NAMESPACE,
        "create",
        "secret",
        "generic",
        "binlake-s3",
        f"--from-literal=access-key={ACCESS_KEY}",
        f"--from-literal=secret-key={SECRET_KEY}",
    )
    manifest = (MANIFESTS / "s3.yaml").read_text().replace("image: IMAGE", f"image: {S3_IMAGE}")
    _apply(cluster, manifest.replace("path: FOLDER", f"path: {folder}"))
    rollout = cluster.kubectl("-n", NAMESPACE, "rollout", "status", "deployment/s3", "--timeout=180s", check=False)
    assert rollout.returncode == 0, _describe(cluster)
    pod = _pods(cluster, "app=s3")[0]
    signed_put(f"http://{pod['status']['podIP']}:7070", f"/{BUCKET}")
    return folder


@pytest.fixture(scope="module")
def spark_release(cluster: Cluster) -> Iterator[tuple[Cluster, Path]]:
    """Kafka and the S3 server in the namespace, the chart installed with sink.mode=spark-operator, and its
    SparkApplication submitted; the S3 server's folder on the node."""
    cluster.kubectl("create", "namespace", NAMESPACE)
    apply_kafka(cluster, NAMESPACE)
    s3_folder = _s3_server(cluster)
    rollout = cluster.kubectl("-n", NAMESPACE, "rollout", "status", "statefulset/kafka", "--timeout=300s", check=False)
    assert rollout.returncode == 0, _describe(cluster)
    cluster.kubectl("apply", "-f", "-", stdin=json.dumps(CRD))
    cluster.kubectl("wait", "--for=condition=Established", "crd/sparkapplications.sparkoperator.k8s.io")
    cluster.kubectl("-n", NAMESPACE, "create", "serviceaccount", SERVICE_ACCOUNT)
    _apply(cluster, ROLE)
    account = f"--serviceaccount={NAMESPACE}:{SERVICE_ACCOUNT}"
    cluster.kubectl("-n", NAMESPACE, "create", "rolebinding", "spark", "--role=spark", account)
    values = [arg for path in VALUES for arg in ("-f", str(path))]
    install = cluster.run_tool(
        tool("helm"), "install", RELEASE, str(ROOT / "helm" / "binlake"), "-n", NAMESPACE, *values, "--timeout", "10m"
    )
    assert install.returncode == 0, install.stdout + install.stderr + _describe(cluster)
    canal = "deployment/binlake-canal"
    done = cluster.kubectl("-n", NAMESPACE, "rollout", "status", canal, "--timeout=600s", check=False)
    assert done.returncode == 0, _describe(cluster)
    application = json.loads(
        cluster.kubectl("-n", NAMESPACE, "get", "sparkapplication", "binlake-sink", "-o", "json").stdout
    )
    _apply(cluster, *submitter(application))
    ok, log = run_job(cluster, NAMESPACE, SUBMITTER, "", 600)
    assert ok, log + _describe(cluster)
    try:
        yield cluster, s3_folder
    finally:
        cluster.kubectl("delete", "namespace", NAMESPACE, "--timeout=300s", check=False, timeout=360)


def test_the_sparkapplication_fills_the_lake_on_s3_with_the_truth(spark_release: tuple[Cluster, Path]) -> None:
    cluster, s3_folder = spark_release
    driver = _running(cluster, "spark-role=driver", 1)[0]
    assert driver["metadata"]["name"] == "binlake-sink-driver"
    executors = _running(cluster, "spark-role=executor", 1)
    # Both are the sink image's, started by its entrypoint's driver / executor commands.
    for pod in [driver, *executors]:
        container = pod["spec"]["containers"][0]
        assert container["image"] == SINK_IMAGE, container["image"]
        assert pod["spec"]["securityContext"].get("runAsUser") == SINK_UID, pod["spec"]["securityContext"]
    assert {e["name"] for e in executors[0]["spec"]["containers"][0]["env"]} >= {"AWS_ACCESS_KEY_ID"}

    ok, log = run_job(cluster, NAMESPACE, "generate-shop", generate(NAMESPACE, NORMALIZER_IMAGE, "shop", EVENTS), 600)
    assert ok, log
    lake = {
        "BINLAKE_SINK_LAKE_URI": f"s3a://{BUCKET}/binlake",
        "BINLAKE_SINK_SPARK_CONF": json.dumps(
            {
                "spark.hadoop.fs.s3a.endpoint": "http://s3:7070",
                "spark.hadoop.fs.s3a.path.style.access": "true",
                "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
            }
        ),
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
    }
    verified = lake_equals_topic_and_truth(
        cluster,
        NAMESPACE,
        image=SINK_IMAGE,
        lake=lake,
        lake_on_node=s3_folder / BUCKET / "binlake",
        expected=truth("shop", EVENTS),
        sink_alive=lambda: _driver_runs(cluster),
    )
    assert f"{EVENTS} events" in verified, verified
    # The executors that ran the batches are the ones asked for at the start: none was lost and replaced.
    assert {p["metadata"]["uid"] for p in _running(cluster, "spark-role=executor", 1)} == {
        p["metadata"]["uid"] for p in executors
    }


def _driver_runs(cluster: Cluster) -> None:
    """Fails, with its log, once the driver has ended: no operator restarts it here."""
    phase = _pods(cluster, "spark-role=driver")[0]["status"].get("phase")
    assert phase == "Running", f"the driver is {phase}:\n{_describe(cluster)}"


def _pods(cluster: Cluster, selector: str) -> list[dict[str, Any]]:
    found = cluster.kubectl("-n", NAMESPACE, "get", "pods", "-l", selector, "-o", "json").stdout
    pods: list[dict[str, Any]] = json.loads(found)["items"]
    return pods


def _running(cluster: Cluster, selector: str, count: int) -> list[dict[str, Any]]:
    """The ``count`` pods of ``selector`` once all run (Spark starts the executors after the driver)."""
    deadline = time.monotonic() + 600
    while True:
        pods = [p for p in _pods(cluster, selector) if "deletionTimestamp" not in p["metadata"]]
        if len(pods) == count and all(p["status"].get("phase") == "Running" for p in pods):
            return pods
        failed = [p["metadata"]["name"] for p in pods if p["status"].get("phase") == "Failed"]
        assert not failed and time.monotonic() < deadline, f"{selector}: {failed or pods}\n{_describe(cluster)}"
        time.sleep(2)


def _describe(cluster: Cluster) -> str:
    driver = cluster.kubectl("-n", NAMESPACE, "logs", "binlake-sink-driver", "--tail=60", check=False).stdout
    return f"{describe(cluster, NAMESPACE)}\ndriver:\n{driver}"
