"""The Spark operator's own part, for the chart's SparkApplication: this machine cannot have the operator.

Kubeflow's Spark operator is refused by the Go module proxy (github.com/kubeflow/spark-operator, its /v2 and
the older GoogleCloudPlatform/spark-on-k8s-operator: 403), and no image registry can be reached. What it does
with a SparkApplication is small (v2, internal/controller/sparkapplication/submission.go): it runs
spark-submit in cluster mode with arguments made from the spec, and its webhook puts on the driver and
executor pods what spark-submit cannot say (env from Secrets, security contexts).

Here that is a Job in the cluster running the sink image's spark-submit with those arguments, and the pod
fields in pod template files (a ConfigMap the Job mounts). Everything after it is Spark's and the chart's:
the driver pod, the executors it asks Kubernetes for, the image's entrypoint for both. Only the fields the
chart sets are read; any other field is refused, so a field added to the chart cannot go unread. Not done
here: the operator's restarts (restartPolicy) and its status.
"""

from __future__ import annotations

import json
from typing import Any, Final

from tests.k8s.workloads import one_pod_job

SUBMITTER: Final = "spark-submit"
TEMPLATES: Final = "/templates"
MASTER: Final = "k8s://https://kubernetes.default.svc:443"
SPEC_FIELDS: Final = {
    "type",
    "pythonVersion",
    "mode",
    "image",
    "imagePullPolicy",
    "mainApplicationFile",
    "arguments",
    "sparkVersion",
    "restartPolicy",
    "sparkConf",
    "driver",
    "executor",
}
DRIVER_FIELDS: Final = {
    "cores",
    "coreRequest",
    "memory",
    "serviceAccount",
    "labels",
    "annotations",
    "env",
    "podSecurityContext",
    "securityContext",
}
EXECUTOR_FIELDS: Final = (DRIVER_FIELDS - {"serviceAccount"}) | {"instances"}


def _conf(key: str, value: object) -> list[str]:
    return ["--conf", f"{key}={value}"]


def _role_conf(role: str, spec: dict[str, Any]) -> list[str]:
    """The driver's or the executors' settings as the operator passes them (driverConfOption and its twin)."""
    args = _conf(f"spark.{role}.cores", spec["cores"]) + _conf(f"spark.{role}.memory", spec["memory"])
    if "coreRequest" in spec:
        args += _conf(f"spark.kubernetes.{role}.request.cores", spec["coreRequest"])
    for key, value in spec.get("labels", {}).items():
        args += _conf(f"spark.kubernetes.{role}.label.{key}", value)
    for key, value in spec.get("annotations", {}).items():
        args += _conf(f"spark.kubernetes.{role}.annotation.{key}", value)
    args += _conf(f"spark.kubernetes.{role}.podTemplateFile", f"{TEMPLATES}/{role}.json")
    return args


def pod_template(spec: dict[str, Any]) -> dict[str, Any]:
    """What the operator's webhook adds to a driver or executor pod: the env (values and Secret references)
    and the security contexts. Spark merges it into the pod it builds."""
    container: dict[str, Any] = {"name": "spark", "env": spec.get("env", [])}
    if "securityContext" in spec:
        container["securityContext"] = spec["securityContext"]
    pod: dict[str, Any] = {"containers": [container]}
    if "podSecurityContext" in spec:
        pod["securityContext"] = spec["podSecurityContext"]
    return {"apiVersion": "v1", "kind": "Pod", "spec": pod}


def submit_args(app: dict[str, Any]) -> list[str]:
    """spark-submit's arguments for the SparkApplication ``app`` (as the API server returns it)."""
    spec, name, namespace = app["spec"], app["metadata"]["name"], app["metadata"]["namespace"]
    unread = (
        (set(spec) - SPEC_FIELDS)
        | {f"driver.{f}" for f in set(spec["driver"]) - DRIVER_FIELDS}
        | {f"executor.{f}" for f in set(spec["executor"]) - EXECUTOR_FIELDS}
    )
    if unread:
        raise ValueError(f"the SparkApplication sets fields this stand-in does not pass on: {sorted(unread)}")
    if spec["type"] != "Python" or spec["mode"] != "cluster":
        raise ValueError(f"only a Python application in cluster mode is submitted here: {spec['type']}, {spec['mode']}")
    args = ["--master", MASTER, "--deploy-mode", "cluster", "--name", name]
    args += _conf("spark.kubernetes.namespace", namespace)
    args += _conf("spark.kubernetes.container.image", spec["image"])
    args += _conf("spark.kubernetes.container.image.pullPolicy", spec.get("imagePullPolicy", "IfNotPresent"))
    args += _conf("spark.kubernetes.submission.waitAppCompletion", "false")
    for key, value in spec.get("sparkConf", {}).items():
        args += _conf(key, value)
    args += _conf("spark.kubernetes.driver.pod.name", f"{name}-driver")
    args += _conf("spark.kubernetes.driver.label.sparkoperator.k8s.io/app-name", name)
    args += _conf("spark.kubernetes.authenticate.driver.serviceAccountName", spec["driver"]["serviceAccount"])
    for key, value in app["metadata"].get("labels", {}).items():
        args += _conf(f"spark.kubernetes.driver.label.{key}", value)
    args += _role_conf("driver", spec["driver"])
    args += _conf("spark.executor.instances", spec["executor"]["instances"])
    args += _role_conf("executor", spec["executor"])
    return [*args, spec["mainApplicationFile"], *spec.get("arguments", [])]


def submitter(app: dict[str, Any]) -> list[dict[str, Any]]:
    """The ConfigMap of pod templates and the Job running spark-submit for ``app``, in its namespace, as the
    driver's service account (the operator's own account would do it on a real cluster)."""
    spec, namespace = app["spec"], app["metadata"]["namespace"]
    templates = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{SUBMITTER}-templates", "namespace": namespace},
        "data": {f"{role}.json": json.dumps(pod_template(spec[role])) for role in ("driver", "executor")},
    }
    # spark-submit is the pyspark package's: the image's entrypoint runs `binlake`, so the command is given.
    home = '$(python3 -c "import os, pyspark; print(os.path.dirname(pyspark.__file__))")'
    command = f'exec "{home}/bin/spark-submit" "$@"'
    pod = {
        "serviceAccountName": spec["driver"]["serviceAccount"],
        "securityContext": spec["driver"].get("podSecurityContext", {}),
        "containers": [
            {
                "name": SUBMITTER,
                "image": spec["image"],
                "imagePullPolicy": spec.get("imagePullPolicy", "IfNotPresent"),
                "command": ["bash", "-c", command, SUBMITTER],
                "args": submit_args(app),
                "resources": {"requests": {"cpu": "100m", "memory": "512Mi"}},
                "volumeMounts": [{"name": "templates", "mountPath": TEMPLATES}],
            }
        ],
        "volumes": [{"name": "templates", "configMap": {"name": f"{SUBMITTER}-templates"}}],
    }
    return [templates, one_pod_job(namespace, SUBMITTER, pod)]
