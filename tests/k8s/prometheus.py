"""A real Prometheus on the node, finding the chart's pods through Kubernetes discovery (role: pod) and their
``prometheus.io/*`` annotations, as an annotation-based Prometheus of a real cluster does.

Built by deploy/k8s/build.sh from the Go module proxy (Debian's Prometheus lacks ``kubernetes_sd_configs``).
It reads the API server with the run's admin kubeconfig and scrapes pod addresses over the node's bridge.
"""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from binlake.shared.devbroker.broker import free_port
from tests.k8s.cluster import BIN, Cluster

JOB: Final = "kubernetes-pods"
SCRAPE_INTERVAL_S: Final = 3
# The usual annotation rules (prometheus.io/scrape, /path, /port), plus the labels the test asks by.
CONFIG: Final = """\
global: {{scrape_interval: {interval}s, scrape_timeout: {timeout}s}}
scrape_configs:
  - job_name: {job}
    kubernetes_sd_configs:
      - role: pod
        kubeconfig_file: {kubeconfig}
        namespaces: {{names: [{namespace}]}}
    relabel_configs:
      - {{source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape], action: keep, regex: "true"}}
      - {{source_labels: [__meta_kubernetes_pod_phase], action: drop, regex: Pending|Succeeded|Failed}}
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
        target_label: __metrics_path__
        regex: (.+)
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        target_label: __address__
        regex: '([^:]+)(?::\\d+)?;(\\d+)'
        replacement: $1:$2
      - {{source_labels: [__meta_kubernetes_pod_name], target_label: pod}}
      - {{source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_component], target_label: component}}
"""


@dataclass(frozen=True)
class Prometheus:
    url: str

    def _get(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}{path}{query}", timeout=10) as answer:
            return json.loads(answer.read())["data"]

    def targets(self) -> dict[str, dict[str, Any]]:
        """The active targets of the pods' job by pod name: health ("up", "down", "unknown"), lastError,
        scrapeUrl."""
        found = self._get("/api/v1/targets", state="active")["activeTargets"]
        return {t["labels"]["pod"]: t for t in found if t["labels"].get("job") == JOB}

    def query(self, expression: str) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._get("/api/v1/query", query=expression)["result"]
        return result

    def wait_until_up(self, pods: set[str], timeout_s: float = 180) -> dict[str, dict[str, Any]]:
        """The targets once exactly ``pods`` are discovered and every one was scraped up."""
        deadline = time.monotonic() + timeout_s
        while True:
            targets = self.targets()
            if set(targets) == pods and all(t["health"] == "up" for t in targets.values()):
                return targets
            if time.monotonic() > deadline:
                seen = {name: (t["health"], t.get("lastError")) for name, t in targets.items()}
                raise AssertionError(f"Prometheus' targets {seen}, expected {sorted(pods)} all up")
            time.sleep(1)


@contextmanager
def running_prometheus(cluster: Cluster, namespace: str) -> Iterator[Prometheus]:
    """Prometheus discovering ``namespace``'s pods, for the block; stopped (by pid) after it."""
    home = cluster.run / "prometheus"
    home.mkdir(exist_ok=True)
    config = home / "prometheus.yml"
    config.write_text(
        CONFIG.format(
            interval=SCRAPE_INTERVAL_S,
            timeout=SCRAPE_INTERVAL_S - 1,
            job=JOB,
            kubeconfig=cluster.kubeconfig,
            namespace=namespace,
        )
    )
    port = free_port()
    log = open(home / "prometheus.log", "wb")  # noqa: SIM115 - closed after the process
    process = subprocess.Popen(
        [
            str(BIN / "prometheus"),
            f"--config.file={config}",
            f"--storage.tsdb.path={home / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"Prometheus did not start:\n{_tail(home / 'prometheus.log')}") from None
                time.sleep(0.5)
        yield Prometheus(url)
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


def _tail(path: Path, lines: int = 30) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
