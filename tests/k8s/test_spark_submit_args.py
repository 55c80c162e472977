"""The operator's stand-in of the spark-operator test (spark_submit.py) on the chart's SparkApplication, as
helm renders it: every field passed on, nothing unread (runs in `make test`; no cluster)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.deploy.test_helm_chart import one, render
from tests.k8s.spark_submit import pod_template, submit_args, submitter

pytestmark = [pytest.mark.unit, pytest.mark.deploy]

VALUES = [Path(__file__).with_name("values.yaml"), Path(__file__).with_name("values-spark.yaml")]


def _application() -> dict[str, Any]:
    docs = render(*(arg for path in VALUES for arg in ("-f", str(path))))
    application = one(docs, "SparkApplication")
    application["metadata"]["namespace"] = "cdc"
    return application


def _confs(args: list[str]) -> dict[str, str]:
    pairs = [args[i + 1] for i, arg in enumerate(args) if arg == "--conf"]
    return dict(pair.split("=", 1) for pair in pairs)


def test_the_rendered_application_becomes_spark_submit_arguments() -> None:
    application = _application()
    args = submit_args(application)
    confs = _confs(args)
    assert args[:4] == ["--master", "k8s://https://kubernetes.default.svc:443", "--deploy-mode", "cluster"]
    assert args[4:6] == ["--name", "binlake-sink"]
    assert args[-1] == "local:///opt/binlake/deploy/sink_main.py"
    assert confs["spark.kubernetes.container.image"] == "localhost/binlake-sink:dev"
    assert confs["spark.kubernetes.container.image.pullPolicy"] == "Never"
    assert confs["spark.kubernetes.driver.request.cores"] == "250m"
    assert confs["spark.kubernetes.executor.request.cores"] == "500m"
    assert confs["spark.executor.instances"] == "1"
    assert confs["spark.hadoop.fs.s3a.endpoint"] == "http://s3:7070"
    assert confs["spark.sql.extensions"] == "io.delta.sql.DeltaSparkSessionExtension"
    assert confs["spark.kubernetes.authenticate.driver.serviceAccountName"] == "spark-operator-spark"
    assert confs["spark.kubernetes.driver.annotation.prometheus.io/scrape"] == "true"


def test_the_env_and_security_contexts_go_in_the_pod_templates() -> None:
    spec = _application()["spec"]
    driver = pod_template(spec["driver"])
    container = driver["spec"]["containers"][0]
    env = {item["name"]: item for item in container["env"]}
    assert env["AWS_ACCESS_KEY_ID"]["valueFrom"]["secretKeyRef"]["name"] == "binlake-s3"
    assert env["BINLAKE_SINK_LAKE_URI"]["value"] == "s3a://lake/binlake"
    assert driver["spec"]["securityContext"]["runAsUser"] == 10001
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    kinds = [manifest["kind"] for manifest in submitter(_application())]
    assert kinds == ["ConfigMap", "Job"]


def test_a_field_the_stand_in_does_not_pass_on_is_refused() -> None:
    application = _application()
    application["spec"]["driver"]["javaOptions"] = "-Dx=y"
    with pytest.raises(ValueError, match=r"driver\.javaOptions"):
        submit_args(application)
