"""deploy/Dockerfile: two targets from one file, non-root, health checks, s3a's connector in step with Spark."""

from __future__ import annotations

import re
from pathlib import Path

import pyspark
import pytest

from tests.deploy.deployment_files import DOCKERFILE

pytestmark = [pytest.mark.unit, pytest.mark.deploy]


def stages() -> dict[str, str]:
    """Each named stage's instructions (the text from its FROM to the next)."""
    text = DOCKERFILE.read_text("utf-8")
    parts = re.split(r"(?m)^FROM\s+\S+\s+AS\s+(\S+)\s*$", text)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def test_two_runtime_targets_non_root_with_health_checks() -> None:
    found = stages()
    for target in ("normalizer", "sink"):
        body = found[target]
        assert "USER 10001:10001" in body, target
        assert "HEALTHCHECK" in body, target
        assert "ENTRYPOINT" in body, target
    assert "/wheels/spark" not in found["normalizer"], "the normalizer image carries no Spark"
    assert "openjdk-17-jre-headless" in found["sink"]


def test_the_base_image_is_a_build_argument() -> None:
    text = DOCKERFILE.read_text("utf-8")
    assert re.search(r"(?m)^ARG BASE_IMAGE=debian:bookworm-slim$", text)
    assert re.search(r"(?m)^FROM \$\{BASE_IMAGE\} AS base$", text)


def test_hadoop_aws_matches_the_hadoop_of_pyspark() -> None:
    """hadoop-aws must be the release of the hadoop-client jars pyspark ships, or s3a fails at class loading."""
    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("hadoop-client-api-*.jar"))
    assert jars, "pyspark ships no hadoop-client-api jar"
    hadoop = jars[-1].name.removeprefix("hadoop-client-api-").removesuffix(".jar")
    match = re.search(r"(?m)^ARG SINK_CLOUD_PACKAGES=org\.apache\.hadoop:hadoop-aws:(\S+)$", DOCKERFILE.read_text())
    assert match is not None
    assert match.group(1) == hadoop


def test_the_sink_only_dependencies_are_pyproject_dependencies() -> None:
    """The normalizer image leaves out the dependencies the Dockerfile names sink-only: each must exist."""
    import tomllib

    from tests.deploy.deployment_files import REPO

    deps = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["dependencies"]
    names = {re.split(r"[=<>\[ ]", dep, maxsplit=1)[0] for dep in deps}
    match = re.search(r"sink = \(([^)]*)\)", DOCKERFILE.read_text("utf-8"))
    assert match is not None
    sink_only = set(re.findall(r'"([^"]+)"', match.group(1)))
    assert {"pyspark", "delta-spark"} <= sink_only
    assert sink_only <= names, f"not in pyproject.toml: {sorted(sink_only - names)}"
