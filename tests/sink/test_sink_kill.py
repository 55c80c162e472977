"""Several formats -> normalizers -> one unified topic -> ``binlake sink``, SIGKILLed during batches.

Three vendor formats (each its own database) are normalized into one unified
topic. The sink runs as its own process (``binlake sink``, processing-time
triggers, small micro-batches) and is killed with SIGKILL while micro-batches are
open (the checkpoint has the batch's offsets but not its commit), ``KILLS`` times: first while both
queries (``mirrors=follow``) have one open, then alternately inside a changelog-query batch and inside a
mirror-query batch; a final run catches up. Then every mirror table equals the generator's ground
truth and the changelog holds every unified-topic record exactly once.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import TimestampType

from binlake.shared.config.settings import kafka_settings
from binlake.shared.event.values import Image, SqlTime, Value
from binlake.shared.generate.compare import equivalent
from binlake.shared.generate.workload import Workload
from binlake.spark_sink import job
from binlake.spark_sink.layout import HIDDEN
from tests.support import kafka_tools
from tests.support.pipeline import normalize_workload
from tests.support.sink_checkpoint import batch_ids, fresh_open, open_batch, planned
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests, spark

# `make chaos` runs it (marker chaos): the short chaos run in `make test-system` (test_chaos.py) kills the sink while
# both queries have a batch open, then once more, and checks the changelog and every mirror against the ground truth.
pytestmark = [pytest.mark.integration, pytest.mark.asyncio, pytest.mark.chaos]
__all__ = ["spark"]

REPO = Path(__file__).resolve().parents[2]
FORMATS = {"canal-json": "db_canal", "maxwell-json": "db_maxwell", "debezium-json": "db_dbz"}
EVENTS = 300
TABLES = 1
"""Tables per format: the kills test the queries' checkpoints and commits, which a table per format exercises."""
SEED = 23
KILLS = int(os.environ.get("BINLAKE_CHAOS_SINK_KILLS", "1"))
"""SIGKILLs per run: the first while both queries have a batch open, the others (`make chaos`:
CHAOS_SINK_KILLS) alternately inside a changelog-query and a mirror-query batch."""
MAX_OFFSETS = 20
"""Changelog batches of 20 records (45 of them): the changelog query still runs when the mirror query's
second batch opens (its first, in a cold JVM, takes about as long as 10-15 changelog batches), so one kill
can interrupt both. The catch-up reads the rest in one batch."""
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
PRIMARY_KEYS = {"db_dbz.*": ["id"]}  # Debezium JSON values name no key


async def _fill_unified_topic(bootstrap: str, tmp_path: Path) -> tuple[str, int]:
    unified = kafka_tools.unique("kill-events")
    await kafka_tools.create_topics(bootstrap, {unified: 3})
    for format_id, database in FORMATS.items():
        await normalize_workload(
            bootstrap, format_id, unified, tmp_path, events=EVENTS, seed=SEED, database=database, tables=TABLES
        )
    return unified, len(await kafka_tools.read_all(bootstrap, unified))


def _mirror_rows(spark: SparkSession, uri: str) -> dict[int, dict[str, Any]]:
    """The mirror's rows by id, instants as aware datetimes, hidden columns left out."""
    frame = spark.read.format("delta").load(uri)
    instants = {f.name for f in frame.schema.fields if isinstance(f.dataType, TimestampType)}
    visible = [f.name for f in frame.schema.fields if f.name not in HIDDEN]
    rows = frame.select(*[F.unix_micros(n).alias(n) if n in instants else F.col(n) for n in visible]).collect()
    out: dict[int, dict[str, Any]] = {}
    for row in rows:
        values = {n: row[n] for n in visible}
        for n in instants:
            if values[n] is not None:
                values[n] = EPOCH + dt.timedelta(microseconds=values[n])
        out[int(values["id"])] = values
    return out


def _same(expected: Value, actual: Any) -> bool:
    """The truth's typed value against a mirror cell: typed (canal, Debezium) or the vendor's text (Maxwell)."""
    if isinstance(expected, SqlTime) and isinstance(actual, int):
        actual = SqlTime(actual)  # TIME is signed microseconds in the mirror
    if isinstance(actual, bytearray):
        actual = bytes(actual)
    return equivalent(expected, actual)


def _until_open(
    process: subprocess.Popen[bytes], log: Path, checkpoints: list[Path], already: dict[Path, set[int]]
) -> None:
    """Wait until a fresh micro-batch is open in every query of ``checkpoints`` at once."""
    deadline = time.monotonic() + 600
    while True:
        if process.poll() is not None:
            pytest.fail(f"the sink exited with {process.returncode}: {log.read_text()[-3000:]}")
        if time.monotonic() > deadline:
            names = [checkpoint.name for checkpoint in checkpoints]
            pytest.fail(f"no fresh micro-batch open in {names} within 600 s: {log.read_text()[-3000:]}")
        opened = [fresh_open(checkpoint, already) for checkpoint in checkpoints]  # each query, every time
        if all(opened):
            return
        time.sleep(0.05)


def _kill_during_a_batch(
    command: list[str], env: dict[str, str], checkpoints: list[Path], rng: random.Random
) -> dict[str, bool]:
    """Start the sink and SIGKILL it while a fresh micro-batch is open in every query of ``checkpoints``
    (never a query's very first batch: the test asks that each query made progress between the kills);
    return, per query, whether the kill left that batch open."""
    log = checkpoints[0].parents[2] / "sink.log"
    with log.open("ab") as out:
        process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT, cwd=REPO)
    try:
        already = {checkpoint: planned(checkpoint) for checkpoint in checkpoints}
        _until_open(process, log, checkpoints, already)
        # Somewhere inside the batch (decode, changelog append; or the MERGEs), then (those batches or the
        # next ones) open again in every query.
        time.sleep(rng.uniform(0.0, 2.0))
        _until_open(process, log, checkpoints, already)
        os.kill(process.pid, signal.SIGKILL)
        process.wait(30)
        return {checkpoint.name: open_batch(checkpoint) for checkpoint in checkpoints}
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)


async def test_sink_survives_sigkill_during_batches(kafka_bootstrap: str, spark: SparkSession, tmp_path: Path) -> None:
    unified, records = await _fill_unified_topic(kafka_bootstrap, tmp_path)
    lake_dir = tmp_path / "lake"
    settings = sink_settings_for_tests(
        topic=unified, lake_uri=lake_dir.as_uri(), primary_keys=PRIMARY_KEYS, max_offsets_per_trigger=MAX_OFFSETS
    )
    env = sink_env(
        settings,
        kafka_bootstrap,
        BINLAKE_SINK_PRIMARY_KEYS=json.dumps(PRIMARY_KEYS),
        BINLAKE_SINK_MAX_OFFSETS_PER_TRIGGER=str(MAX_OFFSETS),
        BINLAKE_SINK_TRIGGER_INTERVAL_S="0.5",
        BINLAKE_SINK_MIRRORS="follow",
        BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S="1",
    )
    command = [sys.executable, "-m", "binlake.shared.cli.main", "sink"]
    checkpoints = [lake_dir / "_checkpoints" / "sink", lake_dir / "_checkpoints" / "mirrors"]
    rng = random.Random(SEED)
    open_kills = {checkpoint.name: 0 for checkpoint in checkpoints}
    for kill in range(KILLS):
        targets = checkpoints if kill == 0 else [checkpoints[kill % 2]]
        for name, was_open in (await asyncio.to_thread(_kill_during_a_batch, command, env, targets, rng)).items():
            open_kills[name] += was_open
    # The kills must really have interrupted micro-batches of both queries, not idle processes.
    assert all(open_kills.values()), f"kills inside an open micro-batch, per query: {open_kills}"
    for checkpoint in checkpoints:
        assert batch_ids(checkpoint / "commits"), f"{checkpoint.name} committed nothing between the kills"

    # Catch up in-process, on the same checkpoint (so the same Delta app id), in one batch per query: the
    # small batches were there to be killed.
    catch_up = settings.model_copy(update={"max_offsets_per_trigger": None})
    await asyncio.to_thread(job.run, spark, catch_up, kafka_settings(kafka_bootstrap))

    changelog = spark.read.format("delta").load(settings.changelog_uri())
    assert changelog.count() == records
    assert changelog.select("_kafka_partition", "_kafka_offset").distinct().count() == records
    expected_tables: dict[str, dict[int, Image]] = {}
    for database in FORMATS.values():
        truth = Workload(seed=SEED, tables=TABLES, database=database)
        for _ in truth.run(EVENTS):
            pass
        expected_tables.update({f"{database}.{table}": rows for table, rows in truth.state.items()})
    assert len(expected_tables) == TABLES * len(FORMATS)
    for table, expected in expected_tables.items():
        got = _mirror_rows(spark, settings.mirror_uri(table))
        assert sorted(got) == sorted(expected), table
        for key, row in expected.items():
            assert set(got[key]) == set(row), (table, key)
            wrong = {c: (v, got[key][c]) for c, v in row.items() if not _same(v, got[key][c])}
            assert not wrong, (table, key, wrong)
    per_table = {r["source_table"]: r["count"] for r in changelog.groupBy("source_table").count().collect()}
    assert sum(per_table.values()) == records
    assert changelog.where(F.col("op") == "DELETE").count() > 0
