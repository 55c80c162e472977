"""The chart's manifests validate against the Kubernetes schemas and the CRDs' (kubeconform, strict).

Schemas (make tools): Kubernetes 1.37's from the kubernetes-validate package, the Prometheus Operator's
CRDs (ServiceMonitor, PrometheusRule) from its Go module, the Kubeflow Spark operator's SparkApplication
(v1beta2) from its API models on PyPI; deploy/tools/build_schemas.py writes them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.deploy.deployment_files import CHART
from tests.deploy.tools import TOOLS, run, tool

pytestmark = [pytest.mark.unit, pytest.mark.deploy]

SCHEMAS = TOOLS / "schemas"
VALUES = {"default": [], "full": ["-f", str(CHART / "ci" / "full-values.yaml")]}
VALUES["spark-operator"] = ["-f", str(CHART / "ci" / "spark-operator-values.yaml")]


def kubeconform(manifests: str) -> str:
    if not (SCHEMAS / "kubernetes").is_dir():
        tool("kubeconform-schemas")  # skips (fails in CI) naming make tools
    done = run(
        tool("kubeconform"),
        "-strict",
        "-summary",
        "-schema-location",
        str(SCHEMAS / "kubernetes" / "{{ .ResourceKind }}{{ .KindSuffix }}.json"),
        "-schema-location",
        str(SCHEMAS / "crds" / "{{ .Group }}" / "{{ .ResourceKind }}_{{ .ResourceAPIVersion }}.json"),
        "-",
        input_text=manifests,
        check=False,
    )
    return done.stdout + done.stderr if done.returncode else ""


def rendered(values: list[str]) -> str:
    return run(tool("helm"), "template", "binlake", str(CHART), "--namespace", "cdc", *values).stdout


@pytest.mark.parametrize("name", list(VALUES))
def test_rendered_chart_is_valid(name: str) -> None:
    manifests = rendered(VALUES[name])
    kinds = {doc["kind"] for doc in yaml.safe_load_all(manifests) if doc}
    assert not kubeconform(manifests), kubeconform(manifests)
    if name == "full":
        assert {"ServiceMonitor", "PrometheusRule", "StatefulSet", "PodDisruptionBudget"} <= kinds
    if name == "spark-operator":
        assert "SparkApplication" in kinds


@pytest.mark.parametrize(
    ("kind", "path"),
    [("StatefulSet", ["spec"]), ("SparkApplication", ["spec", "driver"]), ("ServiceMonitor", ["spec"])],
)
def test_the_validation_is_strict(kind: str, path: list[str], tmp_path: Path) -> None:
    """A misspelt field in any of the validated kinds is caught (the schemas are strict, the CRDs' too)."""
    values = VALUES["spark-operator"] if kind == "SparkApplication" else VALUES["full"]
    docs = [doc for doc in yaml.safe_load_all(rendered(values)) if doc and doc["kind"] == kind]
    assert docs
    target = docs[0]
    for key in path:
        target = target[key]
    target["replica"] = 1
    assert "replica" in kubeconform(yaml.safe_dump(docs[0]))
