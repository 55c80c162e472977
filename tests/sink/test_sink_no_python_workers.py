"""The sink runs no Python on Spark's executors: a cluster whose workers have another Python (or none) works.

On a standalone cluster whose workers' ``python3`` is another minor version than the driver's, any Python step
on the executors fails (``PYTHON_VERSION_MISMATCH``). Here the executors' Python is a path that does not exist
(``PYSPARK_PYTHON``, which Spark's Python workers are started with), so any such step would fail the batch:
a real ``binlake sink`` process writes the changelog, mirrors of several small tables (their one shared fold),
a history table and tombstones, and every mirror equals the generator's ground truth.
"""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from binlake.shared.generate.workload import Workload
from binlake.spark_sink import delta
from tests.sink.test_sink_kill import _mirror_rows, _same
from tests.support import kafka_tools
from tests.support.pipeline import normalize_workload
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

FORMAT, DATABASE = "canal-json", "db_nopy"
EVENTS, TABLES, SEED = 300, 3, 47


async def test_the_sink_needs_no_python_on_executors(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    unified = kafka_tools.unique("nopy-events")
    await kafka_tools.create_topics(kafka_bootstrap, {unified: 2})
    settings = sink_settings_for_tests(topic=unified, lake_uri=(tmp_path / "lake").as_uri())
    truth = Workload(seed=SEED, tables=TABLES, database=DATABASE)
    for _ in truth.run(EVENTS):
        pass
    expected = {f"{DATABASE}.{table}": rows for table, rows in truth.state.items()}
    await normalize_workload(
        kafka_bootstrap, FORMAT, unified, tmp_path, events=EVENTS, seed=SEED, database=DATABASE, tables=TABLES
    )
    env = sink_env(
        settings,
        kafka_bootstrap,
        BINLAKE_SINK_TRIGGER="available-now",
        BINLAKE_SINK_MASTER="local[2]",
        BINLAKE_SINK_HISTORY_TABLES=f"{DATABASE}.t00",
        PYSPARK_PYTHON=str(tmp_path / "no-such-python"),
    )
    log = tmp_path / "sink.log"
    with log.open("wb") as out:
        command = binlake_command("sink")
        done = await asyncio.to_thread(
            subprocess.run, command, check=False, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600
        )
    output = log.read_text(errors="replace")
    assert done.returncode == 0, output[-4000:]
    for table, rows in expected.items():
        got = _mirror_rows(spark, settings.mirror_uri(table))
        assert sorted(got) == sorted(rows), table
        for key, row in rows.items():
            wrong = {c: (v, got[key][c]) for c, v in row.items() if not _same(v, got[key][c])}
            assert not wrong, (table, key, wrong)
    assert delta.exists(spark, settings.history_uri(f"{DATABASE}.t00"))
