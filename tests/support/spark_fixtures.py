"""The Spark integration tests' SparkSession: one per test session, small and local.

``local[2]``, two shuffle partitions, no UI; the connector packages come from
Maven Central through the Ivy cache (``BINLAKE_SINK_SPARK_IVY_DIR``, default
``~/.cache/binlake/ivy``), so only the first run downloads. Without a JDK the
tests skip (fail in CI).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pyspark.sql import SparkSession

from binlake.spark_sink.session import build_session
from binlake.spark_sink.settings import SinkSettings


def sink_settings_for_tests(**overrides: object) -> SinkSettings:
    """Sink settings sized for tests (the fixture's session is built from the same values)."""
    values: dict[str, object] = {
        "master": "local[2]",
        "shuffle_partitions": 2,
        "trigger": "available-now",
        "log_level": "ERROR",
        "spark_conf": {
            "spark.default.parallelism": "2",
            "spark.sql.adaptive.enabled": "false",
            # a failure in CI shows the JVM's own stack (where Spark or Delta raised), not only Python's
            "spark.sql.pyspark.jvmStacktrace.enabled": "true",
            # Spark's interpreted evaluation: the tests' batches are tiny and nearly every plan is new, so compiling
            # code for each cost more than running it (a mirror test: 96 s against 146 s). The benchmarks' sinks
            # generate code (Spark's default); the demo's and the chaos run's turn off whole-stage generation only.
            "spark.sql.codegen.wholeStage": "false",
            "spark.sql.codegen.factoryMode": "NO_CODEGEN",
        },
    }
    values.update(overrides)
    return SinkSettings.model_validate(values)


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    if not shutil.which("java"):
        message = "the Spark sink tests need a JDK (java on PATH)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    session = build_session(sink_settings_for_tests(), app_name="binlake-sink-tests")
    try:
        yield session
    finally:
        session.stop()


def run_sink(
    spark: SparkSession,
    settings: SinkSettings,
    kafka: Any,
    *,
    keep_tails: bool,
    on_mirror_batch: Callable[[Any], None] | None = None,
) -> None:
    """One available-now run of the sink's queries (``job.run``); ``keep_tails``: without its last step, the MERGE
    of every deferred mirror tail (``mirror.tails``), so the next run's batches find them, as a running sink's
    next triggers would."""
    from binlake.spark_sink import job

    queries = job.start(spark, settings, kafka, on_mirror_batch=on_mirror_batch)
    if keep_tails:
        queries.tails = None
    while not queries.wait(60):
        pass
    queries.stop()
    if queries.error() is not None:
        raise RuntimeError(f"the sink failed: {queries.error()}")
