"""The single-node Kubernetes of deploy/k8s/cluster.sh, brought up for a test session and stopped after it.

cluster.sh builds (or finds cached) the binaries, makes the certificates, starts etcd, the control plane,
containerd, the kubelet and kube-proxy, and writes RUN/ready once the node is Ready; SIGTERM stops all of it
by pid and removes what it made. `make test-k8s` sets BINLAKE_K8S=1; without it the tests skip, saying so
(the cluster needs root, minutes and the podman images).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

ROOT: Final = Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT: Final = ROOT / "deploy" / "k8s" / "cluster.sh"
K8S_VERSION: Final = "v1.37.2"
BIN: Final = Path.home() / ".cache" / "binlake" / f"k8s-{K8S_VERSION}" / "bin"
UP_TIMEOUT_S: Final = 600.0
"""A cold start builds nothing (make test-k8s builds first) but imports the images into containerd."""


@dataclass(frozen=True)
class Cluster:
    run: Path
    kubeconfig: Path

    def env(self) -> dict[str, str]:
        return dict(os.environ, KUBECONFIG=str(self.kubeconfig), PATH=f"{BIN}:{os.environ['PATH']}")

    def kubectl(
        self, *args: str, stdin: str | None = None, timeout: float = 180, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [str(BIN / "kubectl"), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=self.env(),
        )
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
        return done

    def run_tool(self, *command: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """A client of the cluster (helm) with its KUBECONFIG; not checked."""
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False, env=self.env())

    def logs(self, component: str, lines: int = 40) -> str:
        """The last lines of a component's log (logs/<component>.log in the run folder)."""
        path = self.run / "logs" / f"{component}.log"
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) if path.exists() else ""


@contextmanager
def running_cluster(run: Path, images: list[str]) -> Iterator[Cluster]:
    """cluster.sh up for the block, with ``images`` (podman's) imported into containerd; stopped after it."""
    if os.environ.get("BINLAKE_K8S") != "1":
        pytest.skip("the single-node Kubernetes runs in `make test-k8s` (root, the podman images; minutes)")
    env = dict(os.environ, BINLAKE_K8S_RUN=str(run), BINLAKE_K8S_IMAGES=" ".join(images), BINLAKE_K8S_KEEP="1")
    with open(run.parent / "cluster.log", "wb") as out:
        process = subprocess.Popen([str(CLUSTER_SCRIPT)], env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + UP_TIMEOUT_S
        ready = run / "ready"
        while not ready.exists():
            if process.poll() is not None or time.monotonic() > deadline:
                output = (run.parent / "cluster.log").read_text(errors="replace")[-6000:]
                raise AssertionError(f"the cluster did not come up (exit {process.poll()}):\n{output}")
            time.sleep(1)
        yield Cluster(run, Path(ready.read_text().strip()))
    finally:
        # cluster.sh's trap stops every process it started, by pid, and removes its pods, mounts and bridges.
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(180)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
            raise
