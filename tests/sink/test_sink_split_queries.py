"""The sink's two queries in two Spark applications (``BINLAKE_SINK_QUERIES``), on one lake.

The mirror query runs as its own ``binlake sink`` process (``queries=mirrors``),
started before the lake exists: it waits for the changelog, which only the
changelog's process makes. The changelog query runs in the test's session
(``queries=changelog``, available-now). The mirrors process then applies what
the changelog holds: every mirror equals the generator's ground truth, the
changelog holds every record once, each process wrote its own checkpoint's app
id and committed only under it, and a SIGINT (Ctrl-C) stops the running mirrors process cleanly: after
pyspark's SparkContext installed its own SIGINT handler (which would cancel the jobs and raise
KeyboardInterrupt: a traceback and status 1), the sink's handler still decides.
"""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from binlake.shared.config.settings import kafka_settings
from binlake.shared.generate.workload import Workload
from binlake.spark_sink import delta, job
from binlake.spark_sink.checkpoint import app_ids
from tests.sink.test_sink_kill import _mirror_rows, _same
from tests.support import kafka_tools
from tests.support.pipeline import normalize_workload
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

FORMAT, DATABASE = "canal-json", "db_split"
EVENTS, TABLES, SEED = 240, 2, 31


def _logged(log: Path, text: str) -> bool:
    return log.exists() and text in log.read_text(errors="replace")


async def test_changelog_and_mirrors_in_two_applications(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    unified = kafka_tools.unique("split-events")
    await kafka_tools.create_topics(kafka_bootstrap, {unified: 2})
    lake = tmp_path / "lake"
    settings = sink_settings_for_tests(topic=unified, lake_uri=lake.as_uri(), queries="changelog")
    env = sink_env(
        settings,
        kafka_bootstrap,
        BINLAKE_SINK_QUERIES="mirrors",
        BINLAKE_SINK_MASTER="local[1]",
        BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S="1",
    )
    log = tmp_path / "mirrors.log"
    truth = Workload(seed=SEED, tables=TABLES, database=DATABASE)
    for _ in truth.run(EVENTS):
        pass
    expected = {f"{DATABASE}.{table}": rows for table, rows in truth.state.items()}

    # Started first: its JVM starts while the topic fills.
    with log.open("wb") as out:
        mirrors = subprocess.Popen(binlake_command("sink"), env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        await normalize_workload(
            kafka_bootstrap, FORMAT, unified, tmp_path, events=EVENTS, seed=SEED, database=DATABASE, tables=TABLES
        )
        records = len(await kafka_tools.read_all(kafka_bootstrap, unified))
        deadline = time.monotonic() + 180
        while not _logged(log, "waiting for the changelog") and mirrors.poll() is None:
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            await asyncio.sleep(0.5)
        assert mirrors.poll() is None, log.read_text(errors="replace")[-3000:]
        assert not delta.exists(spark, settings.changelog_uri())  # the mirrors process made nothing

        await asyncio.to_thread(job.run, spark, settings, kafka_settings(kafka_bootstrap))

        def caught_up() -> bool:
            for table, rows in expected.items():
                uri = settings.mirror_uri(table)
                if not delta.exists(spark, uri) or sorted(_mirror_rows(spark, uri)) != sorted(rows):
                    return False
            return True

        deadline = time.monotonic() + 240
        while not await asyncio.to_thread(caught_up):
            assert mirrors.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the mirrors process did not apply the changelog in 240 s"
            await asyncio.sleep(2)
        mirrors.send_signal(signal.SIGINT)
        assert await asyncio.to_thread(mirrors.wait, 120) == 0, log.read_text(errors="replace")[-3000:]
    finally:
        if mirrors.poll() is None:
            mirrors.kill()
            mirrors.wait()
    output = without_cpython_3130_exit_noise(log.read_text(errors="replace"))
    assert "Traceback" not in output, output[-3000:]
    assert "stopping on signal 2" in output, output[-3000:]

    changelog = spark.read.format("delta").load(settings.changelog_uri())
    assert changelog.count() == records
    assert changelog.select("_kafka_partition", "_kafka_offset").distinct().count() == records
    for table, rows in expected.items():
        got = _mirror_rows(spark, settings.mirror_uri(table))
        for key, row in rows.items():
            wrong = {c: (v, got[key][c]) for c, v in row.items() if not _same(v, got[key][c])}
            assert not wrong, (table, key, wrong)

    # Each process kept its own checkpoint's id and committed only under it.
    log_id = app_ids.resolve(spark, settings.checkpoint(), configured=None, legacy="-").ident.app_id
    mirror_id = app_ids.resolve(spark, settings.mirror_checkpoint(), configured=None, legacy="-").ident.app_id
    assert log_id != mirror_id
    mirror_uris = sorted(settings.mirror_uri(table) for table in expected)
    by_id = app_ids.lake_app_ids(spark, [settings.changelog_uri(), *mirror_uris])
    assert sorted(by_id) == sorted([log_id, mirror_id])
    assert by_id[log_id] == [settings.changelog_uri()]
    assert sorted(by_id[mirror_id]) == mirror_uris


_DUMMY_THREAD_NOISE = re.compile(
    r"Exception ignored in: <function _DeleteDummyThreadOnDel\.__del__ at [^>]*>\n"
    r"Traceback \(most recent call last\):\n(?:  .*\n)*?TypeError: [^\n]*\n"
)


def without_cpython_3130_exit_noise(output: str) -> str:
    """The output without what CPython 3.13.0 prints at exit for each thread py4j's callback server made
    (``_DeleteDummyThreadOnDel``: a bug of that release, fixed in 3.13.1), which is not the sink's."""
    return _DUMMY_THREAD_NOISE.sub("", output)
