"""Writes the JSON schemas kubeconform validates the chart's manifests with (make tools).

    build_schemas.py OUT PROMETHEUS_OPERATOR_CRD_DIR KUBERNETES_SCHEMA_DIR

- Kubernetes' own kinds: the strict schemas of the kubernetes-validate package (PyPI), made standalone
  (kubeconform resolves no reference into another file): each resource kind's file gets the definitions it
  reaches, as OUT/kubernetes/<kind>-<group>-<version>.json (kubeconform's naming);
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


SHARED_REF = "/api/_definitions.json#/$defs/"


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            for prefix in (SHARED_REF, "#/$defs/"):  # a resource's file, the shared definitions' own
                if ref.startswith(prefix):
                    found.add(ref.removeprefix(prefix))
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for item in node:
            _refs(item, found)


def _local(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            # (a property may be named $ref too: CustomResourceDefinition's JSONSchemaProps)
            key: (value.replace(SHARED_REF, "#/$defs/") if key == "$ref" and isinstance(value, str) else _local(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_local(item) for item in node]
    return node


def kubernetes(out: Path, source: Path) -> None:
    definitions = json.loads((source / "_definitions.json").read_text("utf-8"))["$defs"]
    target = out / "kubernetes"
    target.mkdir(parents=True, exist_ok=True)
    for path in source.glob("*.json"):
        if path.name.startswith("_") or path.name == "all.json":
            continue
        schema = json.loads(path.read_text("utf-8"))
        if "x-kubernetes-group-version-kind" not in schema:
            continue  # a part of a resource, never validated alone
        needed: set[str] = set()
        _refs(schema, needed)
        pending = list(needed)
        while pending:
            reached: set[str] = set()
            _refs(definitions[pending.pop()], reached)
            pending += sorted(reached - needed)
            needed |= reached
        schema["$defs"] = {name: definitions[name] for name in sorted(needed)}
        schema.pop("$id", None)  # the package's registry address: the file stands alone
        (target / path.name).write_text(json.dumps(_local(schema)), "utf-8")


def main() -> int:
    out, crd_dir, kubernetes_dir = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
    for name in ("monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"):
        crd(out / "crds", crd_dir / name)
    spark_application(out / "crds")
    kubernetes(out, kubernetes_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
