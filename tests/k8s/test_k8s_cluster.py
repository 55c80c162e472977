"""The single-node cluster itself (make test-k8s): the node Ready, a pod from an image built here running,
and its log read back through the API server from the kubelet (the path `kubectl logs` takes)."""

from __future__ import annotations

import json
import time

import pytest

from tests.k8s.cluster import Cluster
from tests.k8s.conftest import HELLO_IMAGE

pytestmark = [pytest.mark.integration]

HELLO_POD = f"""
apiVersion: v1
kind: Pod
metadata: {{name: hello, namespace: default}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1  # its shell ignores SIGTERM
  containers:
  - name: hello
    image: {HELLO_IMAGE}
    imagePullPolicy: Never
    securityContext: {{runAsUser: 10001, allowPrivilegeEscalation: false}}
"""


def test_the_node_is_ready(cluster: Cluster) -> None:
    node = json.loads(cluster.kubectl("get", "node", "binlake-node", "-o", "json").stdout)
    ready = {c["type"]: c["status"] for c in node["status"]["conditions"]}["Ready"]
    assert ready == "True", cluster.logs("kubelet")
    assert node["status"]["nodeInfo"]["kubeletVersion"] == "v1.37.2"
    assert node["status"]["nodeInfo"]["containerRuntimeVersion"].startswith("containerd://2.")


def test_a_pod_from_a_local_image_runs_and_its_log_reads_back(cluster: Cluster) -> None:
    cluster.kubectl("apply", "-f", "-", stdin=HELLO_POD)
    try:
        wait = cluster.kubectl("wait", "--for=condition=Ready", "pod/hello", "--timeout=120s", check=False)
        assert wait.returncode == 0, cluster.kubectl("describe", "pod", "hello").stdout + cluster.logs("kubelet")
        pod = json.loads(cluster.kubectl("get", "pod", "hello", "-o", "json").stdout)
        assert pod["status"]["podIP"].startswith("10.244.0."), pod["status"]
        deadline = time.monotonic() + 30
        while "hello from a binlake pod" not in (log := cluster.kubectl("logs", "hello", check=False).stdout):
            assert time.monotonic() < deadline, log
            time.sleep(0.5)
    finally:
        cluster.kubectl("delete", "pod", "hello", "--wait=true", "--timeout=60s", check=False)
