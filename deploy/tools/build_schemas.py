"""Writes the JSON schemas kubeconform validates the chart's CRD objects with (make tools).

    build_schemas.py OUT PROMETHEUS_OPERATOR_CRD_DIR

- ServiceMonitor and PrometheusRule: the openAPIV3Schema of the Prometheus Operator's own CRDs (the
  prometheus-operator Go module's example/prometheus-operator-crd/);
- SparkApplication (sparkoperator.k8s.io/v1beta2): the Kubeflow Spark operator's API models, generated from
  the operator's OpenAPI spec and published on PyPI as kubeflow-spark-api (its Go module is not on the
  module proxy), as JSON schema.

Every object schema with properties is made strict (no other property), as kubeconform's own CRD
converter does with -strict, unless the CRD lets the object keep unknown fields.
Run by the tools' virtualenv (pyyaml, kubeflow-spark-api), not the project's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml


def strict(node: Any) -> Any:
    if isinstance(node, dict):
        out = {key: strict(value) for key, value in node.items()}
        if (
            "properties" in out
            and "additionalProperties" not in out
            and not out.get("x-kubernetes-preserve-unknown-fields")
        ):
            out["additionalProperties"] = False
        return out
    if isinstance(node, list):
        return [strict(item) for item in node]
    return node


def write(out: Path, group: str, kind: str, version: str, schema: dict[str, Any]) -> None:
    path = out / group / f"{kind.lower()}_{version}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(schema, indent=1), "utf-8")


def crd(out: Path, path: Path) -> None:
    doc = yaml.safe_load(path.read_text("utf-8"))
    spec = doc["spec"]
    for version in spec["versions"]:
        schema = strict(version["schema"]["openAPIV3Schema"])
        write(out, spec["group"], spec["names"]["kind"], version["name"], schema)


def _rename_refs(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: (value.replace("#/$defs/", "#/definitions/") if key == "$ref" else _rename_refs(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rename_refs(item) for item in node]
    return node


def spark_application(out: Path) -> None:
    from kubeflow_spark_api.models.spark_v1beta2_spark_application import SparkV1beta2SparkApplication

    schema = SparkV1beta2SparkApplication.model_json_schema(by_alias=True)
    schema["definitions"] = schema.pop("$defs", {})
    schema = strict(_rename_refs(schema))
    # Kubernetes' own metadata is checked by the API server, not by this model (a free-form object there).
    schema["properties"]["metadata"] = {"type": "object"}
    write(out, "sparkoperator.k8s.io", "SparkApplication", "v1beta2", schema)


def main() -> int:
    out, crd_dir = Path(sys.argv[1]), Path(sys.argv[2])
    for name in ("monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"):
        crd(out, crd_dir / name)
    spark_application(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
