"""``binlake sink`` (a real process, real Spark) stopped during its start: status 0, no traceback.

Two moments: a SIGTERM while the command modules are imported (before the
handlers came first this killed the sink with status -15); a SIGTERM while
Spark's JVM starts (the queries are then never started). A SIGINT once the sink
runs is tested on the mirrors process of ``test_sink_split_queries``.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import kafka_tools
from tests.support.signal_probe import binlake_command, children, signal_during_start
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads signal handlers from /proc (Linux)"),
    pytest.mark.skipif(not shutil.which("java"), reason="the Spark sink needs a JDK (java on PATH)"),
]


def _sink_env(bootstrap: str, topic: str, lake: Path) -> dict[str, str]:
    settings = sink_settings_for_tests(topic=topic, lake_uri=lake.as_uri())
    return sink_env(settings, bootstrap, BINLAKE_SINK_TRIGGER_INTERVAL_S="1")


def _jvm_starting(process: subprocess.Popen[bytes]) -> bool:
    return bool(children(process.pid))


def _assert_clean(returncode: int, output: str, when: str) -> None:
    assert returncode == 0, f"{when}: status {returncode}\n{output[-3000:]}"
    assert "Traceback" not in output, f"{when}:\n{output[-3000:]}"


@pytest.mark.asyncio
async def test_sink_stops_cleanly_during_start(kafka_bootstrap: str, tmp_path: Path) -> None:
    topic = kafka_tools.unique("stop-events")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 1})
    env = _sink_env(kafka_bootstrap, topic, tmp_path / "lake")
    command = binlake_command("sink")

    in_imports = await asyncio.to_thread(signal_during_start, command, env, moment_s=0.35, after_handler=True)
    _assert_clean(in_imports.returncode, in_imports.output, "SIGTERM 0.35 s after start")
    assert "stopping on signal 15 before Spark started" in in_imports.output

    log = tmp_path / "jvm.log"
    in_spark = await asyncio.to_thread(
        signal_during_start, command, env, moment_s=0, log=log, after=_jvm_starting, timeout_s=300
    )
    _assert_clean(in_spark.returncode, in_spark.output, "SIGTERM while Spark starts")
    assert "stopping on signal 15" in in_spark.output
    assert "sink started" not in in_spark.output  # stopped before its queries ran
