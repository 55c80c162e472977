"""The mirror writer without Spark (``BINLAKE_SINK_MIRROR_WRITER=python``) as a process, on a real broker and Delta.

The changelog writer (in this process) writes the topic to the changelog in many small versions while the
mirror writer runs as ``binlake sink`` in its own process, and is SIGKILLed at random points (inside a
batch, between its commits, between a batch's commits and its commit log entry) and started again. Once
it has caught up, every mirror equals the generator's truth: no change lost, none applied twice. The
process exposes the mirror metrics and health the Spark mirror process does and starts no JVM. A batch
that fails halfway (a table's MERGE refused) is replayed by the next run with the same range.
"""

from __future__ import annotations

import asyncio
import json
import random
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from arro3.core import Array, DataType, RecordBatch
from deltalake import DeltaTable, write_deltalake
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.spark_sink.changelog import writer
from binlake.spark_sink.changelog.arrow_rows import KafkaRecord, changelog_batch
from binlake.spark_sink.changelog.delta_rs import DeltaRsChangelog
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.mirror import follower, table_rows
from binlake.spark_sink.mirror.delta_rs_mirror import DeltaRsMirrors, MirrorWriteError
from binlake.spark_sink.mirror.table_rows import Batch
from binlake.spark_sink.observe.steps import StepClock
from binlake.spark_sink.settings import SinkSettings
from tests.bench import sink_bench
from tests.bench.sink_sustained import frame_ids, truth_mismatches
from tests.sink.test_sink_metrics_scraped import _by_label, _get, _samples
from tests.sink.test_sink_semantics import ROUND_1
from tests.support import kafka_tools
from tests.support.delta_rows import query_rows
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

TABLES = 4
EVENTS = 2_400
CHUNKS = 8


def _settings(topic: str, tmp_path: Path) -> SinkSettings:
    return sink_settings_for_tests(
        topic=topic,
        lake_uri=str(tmp_path / "lake"),
        max_offsets_per_trigger=100,
        trigger_interval_s=0.2,
        type_widening=False,
    )


async def _produce_and_write(bootstrap: str, settings: SinkSettings, first: int, last: int) -> None:
    items = sink_bench.generate(last, seed=9, tables=TABLES)[first:]
    await kafka_tools.produce(bootstrap, settings.topic, [(i.key, i.value) for i in items])
    await writer.run(settings, kafka_settings(bootstrap), "writer-app", stop=asyncio.Event(), until_caught_up=True)


def _start(settings: SinkSettings, bootstrap: str, output: Path, **extra: str) -> subprocess.Popen[bytes]:
    env = sink_env(
        settings,
        bootstrap,
        BINLAKE_SINK_QUERIES="mirrors",
        BINLAKE_SINK_MIRROR_WRITER="python",
        BINLAKE_SINK_TYPE_WIDENING="false",
        BINLAKE_SINK_TRIGGER_INTERVAL_S="0.2",
        **extra,
    )
    before = _started(output)
    with output.open("a") as log_file:
        process = subprocess.Popen(binlake_command("sink"), env=env, stdout=log_file, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while len(_started(output)) == len(before) and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)  # killed only once it runs: a kill during the interpreter's start tests nothing
    return process


def _started(output: Path) -> list[dict[str, Any]]:
    text = output.read_text() if output.exists() else ""
    return [json.loads(line) for line in text.splitlines() if '"sink started"' in line]


def _mismatches(spark: SparkSession, settings: SinkSettings) -> list[str]:
    names = [f"bench.t{i:02d}" for i in range(TABLES)]
    frames = {name: spark.read.format("delta").load(settings.mirror_uri(name)) for name in names}
    return truth_mismatches(frame_ids(frames), events=EVENTS, seed=9, tables=TABLES, database="bench")


@pytest.mark.asyncio
async def test_the_mirror_writer_survives_sigkills_and_equals_the_truth(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = kafka_tools.unique("mirror-writer")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 2})
    settings = _settings(topic, tmp_path)
    await _produce_and_write(kafka_bootstrap, settings, 0, EVENTS // CHUNKS)
    output = tmp_path / "mirrors.log"
    rng = random.Random(3)
    process = _start(settings, kafka_bootstrap, output)
    try:
        for chunk in range(1, CHUNKS):
            first, last = chunk * EVENTS // CHUNKS, (chunk + 1) * EVENTS // CHUNKS
            await _produce_and_write(kafka_bootstrap, settings, first, last)
            await asyncio.sleep(rng.uniform(0.1, 1.5))
            if chunk % 2:
                process.send_signal(signal.SIGKILL)
                await asyncio.to_thread(process.wait, 30)
                process = _start(settings, kafka_bootstrap, output)
        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait, 30)
        # Catch up (available-now): the last batch a kill cut short runs again, then the rest.
        process = _start(settings, kafka_bootstrap, output, BINLAKE_SINK_TRIGGER="available-now")
        assert await asyncio.to_thread(process.wait, 120) == 0, output.read_text()[-3000:]
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert _mismatches(spark, settings) == []
    logged = _started(output)
    assert len(logged) == CHUNKS // 2 + 2 and all(entry.get("mirror_writer") == "python" for entry in logged)


@pytest.mark.asyncio
async def test_the_mirror_writer_process_reports_its_batches_and_stops_on_sigterm(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    topic = kafka_tools.unique("mirror-writer")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 2})
    settings = _settings(topic, tmp_path)
    await _produce_and_write(kafka_bootstrap, settings, 0, 600)
    output = tmp_path / "mirrors.log"
    process = _start(settings, kafka_bootstrap, output)
    try:
        started: dict[str, Any] = {}
        deadline = time.monotonic() + 60
        while not started and time.monotonic() < deadline and process.poll() is None:
            lines = [line for line in output.read_text().splitlines() if '"sink started"' in line]
            started = json.loads(lines[0]) if lines else {}
            await asyncio.sleep(0.2)
        assert started.get("mirror_writer") == "python", output.read_text()
        port = int(started["metrics_port"])
        scraped: dict[Any, float] = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            scraped = _samples((await asyncio.to_thread(_get, port, "/metrics"))[1])
            if sum(_by_label(scraped, "binlake_sink_mirror_rows_total", "table", "op").values()) >= 600:
                break
            await asyncio.sleep(0.5)
        rows = _by_label(scraped, "binlake_sink_mirror_rows_total", "table", "op")
        assert sum(rows.values()) == 600 and {t for t, _ in rows} == {f"bench.t{i:02d}" for i in range(TABLES)}
        assert scraped[("binlake_sink_mirror_last_commit_timestamp_seconds", ())] > 0
        steps = {
            name for (name,), seconds in _by_label(scraped, "binlake_sink_batch_step_seconds_total", "step").items()
        }
        assert {"read_changelog", "fold"} <= steps and steps & {"append", "merge"}, steps  # where a batch went
        assert (await asyncio.to_thread(_get, port, "/readyz"))[0] == 200
        assert (await asyncio.to_thread(_get, port, "/healthz"))[0] == 200
        children = subprocess.run(
            ["ps", "-o", "args=", "--ppid", str(process.pid)], capture_output=True, text=True, check=False
        ).stdout
        assert "java" not in children  # no Spark: no JVM
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


class _FailingMirrors(DeltaRsMirrors):
    """Mirrors whose batch fails after its first table's MERGE (a broker of storage refusing a commit)."""

    def apply(self, events: Batch, batch_id: int, *, steps: StepClock | None = None) -> Any:
        first = sorted(events.rows)[:1]
        partial = Batch({t: events.rows[t] for t in first}, [], {t: events.descriptors[t] for t in first})
        super().apply(partial, batch_id, steps=steps)
        raise OSError("the storage refused a commit")


@pytest.mark.asyncio
async def test_a_batch_that_failed_halfway_runs_again_with_its_range(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = kafka_tools.unique("mirror-writer")
    await kafka_tools.create_topics(kafka_bootstrap, {topic: 2})
    settings = _settings(topic, tmp_path)
    await _produce_and_write(kafka_bootstrap, settings, 0, EVENTS)
    stop = threading.Event()
    with pytest.raises(OSError, match="refused"):
        follower.run(settings, "mirror-app", stop=stop, store=_FailingMirrors(settings, "mirror-app"))
    progress = follower.Progress(settings.mirror_checkpoint())
    assert progress.state() == (None, 0)  # logged, not committed
    follower.run(settings, "mirror-app", stop=stop, until_caught_up=True)
    assert progress.state() == (0, None)
    assert _mismatches(spark, settings) == []


class _CrashBeforeTombstones(DeltaRsMirrors):
    """Mirrors whose batch stops after every mirror's commit, before the tombstones' append (a SIGKILL there)."""

    def _record(self, uri: str, deleted: list[tuple[str, str, str]], batch_id: int) -> None:
        raise OSError("killed before the tombstones' append")


def test_a_replay_after_the_mirror_commits_still_appends_their_tombstones(tmp_path: Path) -> None:
    """A replayed batch skips the mirrors holding its transaction but still records their deleted keys."""
    messages = [avro.encode(e) for e in ROUND_1]
    records = [KafkaRecord("t", 0, i, 1_764_000_000_000 + i, None, m) for i, m in enumerate(messages)]
    batch = changelog_batch(records).rows
    tables, bodies = batch.column("source_table").to_pylist(), batch.column("event_avro").to_pylist()
    clean = sink_settings_for_tests(lake_uri=str(tmp_path / "clean"), type_widening=False)
    DeltaRsMirrors(clean, "app").apply(table_rows.read(tables, bodies), 0)
    crashed = sink_settings_for_tests(lake_uri=str(tmp_path / "crashed"), type_widening=False)
    with pytest.raises(OSError, match="killed"):
        _CrashBeforeTombstones(crashed, "app").apply(table_rows.read(tables, bodies), 0)
    replayed = DeltaRsMirrors(crashed, "app").apply(table_rows.read(tables, bodies), 0)
    assert replayed.skipped == sorted(set(tables))
    assert replayed.deleted == 4
    assert _tombstones(crashed) == _tombstones(clean) != []


def _tombstones(settings: SinkSettings) -> list[tuple[str, str, str]]:
    sql = "SELECT source_table, key, _binlake_order_key FROM t"
    return sorted(query_rows(DeltaTable(settings.tombstones_uri()), sql)[1])


def test_rows_deleted_from_the_changelog_are_not_events(tmp_path: Path) -> None:
    """The change feed of a changelog version that deletes rows (an operator's retention) yields no events."""
    settings = sink_settings_for_tests(lake_uri=str(tmp_path / "lake"), type_widening=False)
    store = DeltaRsChangelog(settings.changelog_uri(), settings.quarantine_uri(), "w", partition_by=[])
    store.resume("t", [0])
    messages = [avro.encode(e) for e in ROUND_1]
    records = [KafkaRecord("t", 0, i, 1_764_000_000_000 + i, None, m) for i, m in enumerate(messages)]
    store.write(changelog_batch(records), records)
    changelog = DeltaTable(settings.changelog_uri())
    written = changelog.version()
    assert sum(len(r) for r in follower.read_range(changelog, written, written).rows.values()) > 0
    changelog.delete("_kafka_offset < 5")
    changelog = DeltaTable(settings.changelog_uri())
    deleted = follower.read_range(changelog, written + 1, changelog.version())
    assert (deleted.rows, deleted.control) == ({}, [])


def test_a_table_with_tombstones_of_an_earlier_release_is_refused(tmp_path: Path) -> None:
    """Their floors are the Spark mirror's to read: the writer without Spark stops with what to do."""
    settings = sink_settings_for_tests(lake_uri=str(tmp_path / "lake"), type_widening=False)
    legacy = RecordBatch.from_arrays([Array(['["1"]'], DataType.string())], names=["_binlake_order_key"])
    write_deltalake(settings.legacy_tombstones_uri("t.keyed"), legacy)
    messages = [avro.encode(e) for e in ROUND_1]
    records = [KafkaRecord("t", 0, i, 1_764_000_000_000 + i, None, m) for i, m in enumerate(messages)]
    batch = changelog_batch(records).rows
    events = table_rows.read(batch.column("source_table").to_pylist(), batch.column("event_avro").to_pylist())
    with pytest.raises(MirrorWriteError, match="BINLAKE_SINK_MIRROR_WRITER=spark"):
        DeltaRsMirrors(settings, "app").apply(events, 0)


def test_a_mirror_deleted_under_the_writer_is_opened_again_not_written_as_kept(tmp_path: Path) -> None:
    """The writer keeps the tables it opened between batches; one an operator deleted meanwhile is opened again
    (and made again by the next batch's rows, as before the writer kept tables), never appended to as the kept
    object remembers it (a log without its first versions) nor failing on its vanished files."""
    settings = sink_settings_for_tests(lake_uri=str(tmp_path / "lake"), type_widening=False)
    values = [item.value for item in sink_bench.generate(1_200, seed=11)]

    def batch(first: int, last: int) -> Batch:
        records = [KafkaRecord("t", 0, i, 1_764_000_000_000 + i, None, values[i]) for i in range(first, last)]
        rows = changelog_batch(records).rows
        return table_rows.read(rows.column("source_table").to_pylist(), rows.column("event_avro").to_pylist())

    mirrors = DeltaRsMirrors(settings, "app")
    mirrors.apply(batch(0, 600), 0)
    uri = settings.mirror_uri("bench.t00")
    kept_version = DeltaTable(uri).version()
    shutil.rmtree(str(local_root(uri)))
    later = batch(600, 1_200)
    assert "bench.t00" in later.rows
    mirrors.apply(later, 1)
    again = DeltaTable(uri)
    assert again.version() <= kept_version  # a new log from version 0, not the kept one's next version
    keys = {row[0] for row in query_rows(again, 'SELECT "id" FROM t')[1]}
    assert keys, "the next batch's rows made the mirror again"
