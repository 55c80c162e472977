"""The sink writes a lake on a real S3-compatible server through s3a://, and ``binlake lake verify`` reads it.

The server is versitygw (an S3 gateway over a local folder, built from its Go module by ``make deploy-tools``):
a server speaking the S3 protocol over HTTP, not a mock of a client library. ``binlake sink`` and
``binlake lake verify`` run as processes, configured as the chart's local mode configures them (the lake URI,
the checkpoints on the sink's own disk, the endpoint and path-style access in BINLAKE_SINK_SPARK_CONF, the
credentials as AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, hadoop-aws added by BINLAKE_SINK_SPARK_EXTRA_PACKAGES
as the sink image does).
It runs in ``make test-deploy`` (``BINLAKE_DEPLOY_STACK=1``, which CI runs after ``make test``): two cold Spark
applications, about five minutes. Skipped, saying so, elsewhere, and where the server is not installed
(``make tools``); in CI that is a failure.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from binlake.shared.devbroker.broker import free_port
from tests.deploy.tools import tool
from tests.support import kafka_tools
from tests.support.pipeline import Topics, normalizer_settings, run_normalizer_until_caught_up, send_workload
from tests.support.s3 import ACCESS_KEY, BUCKET, SECRET_KEY, signed_put

pytestmark = [pytest.mark.integration]

DOCKERFILE: Final = Path(__file__).resolve().parents[2] / "deploy" / "Dockerfile"


@pytest.fixture(scope="module")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The server's endpoint, and the folder its posix backend keeps the buckets in."""
    if os.environ.get("BINLAKE_DEPLOY_STACK") != "1":
        pytest.skip("the s3a:// lake runs in `make test-deploy` (two Spark applications; minutes)")
    server = tool("versitygw")
    root = tmp_path_factory.mktemp("s3")
    port = free_port()
    log = root.parent / "versitygw.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [server, "--access", ACCESS_KEY, "--secret", SECRET_KEY, "--port", f"127.0.0.1:{port}", "posix", str(root)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.2)
        signed_put(endpoint, f"/{BUCKET}")
        yield endpoint, root
    finally:
        process.terminate()
        process.wait(30)


def _hadoop_aws() -> str:
    match = re.search(r"(?m)^ARG SINK_CLOUD_PACKAGES=(\S+)$", DOCKERFILE.read_text("utf-8"))
    assert match is not None
    return match.group(1)


def _env(bootstrap: str, topic: str, endpoint: str, checkpoints: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env.update(
        {
            "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
            "BINLAKE_SINK_TOPIC": topic,
            "BINLAKE_SINK_LAKE_URI": f"s3a://{BUCKET}/binlake",
            # As the chart's local mode keeps them: on the sink's own disk (a PVC), the lake on the object store.
            "BINLAKE_SINK_CHECKPOINT_URI": (checkpoints / "sink").as_uri(),
            "BINLAKE_SINK_MIRROR_CHECKPOINT_URI": (checkpoints / "mirrors").as_uri(),
            "BINLAKE_SINK_MASTER": "local[2]",
            "BINLAKE_SINK_SHUFFLE_PARTITIONS": "2",
            "BINLAKE_SINK_TRIGGER": "available-now",
            "BINLAKE_SINK_LOG_LEVEL": "ERROR",
            "BINLAKE_SINK_METRICS_PORT": "0",
            "BINLAKE_SINK_SPARK_EXTRA_PACKAGES": _hadoop_aws(),
            "BINLAKE_SINK_SPARK_CONF": json.dumps(
                {
                    "spark.hadoop.fs.s3a.endpoint": endpoint,
                    "spark.hadoop.fs.s3a.path.style.access": "true",
                    # The server's region: S3A signs for its own default (us-east-2) otherwise.
                    "spark.hadoop.fs.s3a.endpoint.region": "us-east-1",
                    "spark.hadoop.fs.s3a.connection.ssl.enabled": "false",
                    "spark.default.parallelism": "2",
                }
            ),
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_REGION": "us-east-1",
        }
    )
    if "BINLAKE_SINK_SPARK_IVY_DIR" in os.environ:
        env["BINLAKE_SINK_SPARK_IVY_DIR"] = os.environ["BINLAKE_SINK_SPARK_IVY_DIR"]
    return env


def _why(done: subprocess.CompletedProcess[str]) -> str:
    """The error lines of a JVM's output (its stack frames are too many to read)."""
    lines = (done.stdout + done.stderr).splitlines()
    causes = [line for line in lines if re.search(r"Exception|Error|Caused by", line) and "\tat " not in line]
    return "\n".join(causes[:40]) + "\n...\n" + "\n".join(lines[-20:])


def _binlake(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "binlake.shared.cli.main", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )


@pytest.mark.asyncio
async def test_sink_writes_and_verify_reads_a_lake_on_s3(
    kafka_bootstrap: str, s3_server: tuple[str, Path], tmp_path: Path
) -> None:
    endpoint, root = s3_server
    topics = Topics.fresh("s3-canal")
    await kafka_tools.create_topics(kafka_bootstrap, {topics.vendor: 2, topics.events: 2, topics.dlq: 1})
    await send_workload(kafka_bootstrap, "canal-json", topics, events=100, seed=5, zone_name="UTC", tables=1)
    await run_normalizer_until_caught_up(kafka_bootstrap, normalizer_settings("canal-json", topics, tmp_path, "UTC"), 2)
    env = _env(kafka_bootstrap, topics.events, endpoint, tmp_path / "checkpoints")
    sink = _binlake(env, "sink")
    assert sink.returncode == 0, _why(sink)
    verify = _binlake(env, "lake", "verify")
    assert verify.returncode == 0, _why(verify)
    # The lake is on the server: the changelog's Delta log is among the bucket's objects (the posix
    # backend keeps them as files under its folder).
    assert list((root / BUCKET / "binlake" / "changelog" / "_delta_log").glob("*.json"))
