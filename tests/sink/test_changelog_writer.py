"""The changelog written without Spark (``changelog.writer``), on a real broker, Delta and Spark.

Every record lands once: events in the changelog, unreadable messages in the
quarantine, across batches, a second run, a crash between a batch's
quarantine and changelog commits, and a lake whose changelog the Spark sink
began. The Spark mirror query follows the changelog the writer makes, and its
mirrors equal the generator's truth.
"""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from binlake.shared.codec import avro
from binlake.shared.config.settings import kafka_settings
from binlake.spark_sink import job
from binlake.spark_sink.changelog import delta_rs, writer
from binlake.spark_sink.checkpoint import app_ids
from binlake.spark_sink.settings import SinkSettings
from tests.bench import sink_bench
from tests.bench.sink_sustained import frame_ids, truth_mismatches
from tests.sink.test_sink_metrics_scraped import _by_label, _get, _samples
from tests.support import kafka_tools
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = [pytest.mark.integration, pytest.mark.asyncio]
__all__ = ["spark"]

TABLES = 4
GARBAGE = [b'{"not": "avro"}', avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff", b"\xc3"]


async def _topic(bootstrap: str, events: int, *, seed: int, garbage: bool = True) -> str:
    topic = kafka_tools.unique("writer")
    await kafka_tools.create_topics(bootstrap, {topic: 3})
    await _produce(bootstrap, topic, 0, events, seed=seed, garbage=garbage)
    return topic


async def _produce(bootstrap: str, topic: str, first: int, last: int, *, seed: int, garbage: bool = False) -> None:
    """Events ``first`` to ``last`` (exclusive) of the generator's sequence (``seed``), garbage after them."""
    items = sink_bench.generate(last, seed=seed, tables=TABLES)[first:]
    await kafka_tools.produce(
        bootstrap, topic, [(i.key, i.value) for i in items] + [(None, g) for g in (GARBAGE if garbage else [])]
    )


def _settings(topic: str, tmp_path: Path, **overrides: Any) -> SinkSettings:
    values: dict[str, Any] = {
        "topic": topic,
        "lake_uri": (tmp_path / "lake").as_uri(),
        "max_offsets_per_trigger": 150,
        "trigger_interval_s": 0.2,
    }
    values.update(overrides)
    return sink_settings_for_tests(**values)


async def _write(settings: SinkSettings, bootstrap: str, batches: list[writer.WriterBatch] | None = None) -> None:
    await writer.run(
        settings,
        kafka_settings(bootstrap),
        "writer-app",
        stop=asyncio.Event(),
        on_batch=None if batches is None else batches.append,
        until_caught_up=True,
    )


def _landed(spark: SparkSession, settings: SinkSettings) -> tuple[Counter[tuple[int, int]], list[str]]:
    """How often each (partition, offset) is in the changelog; the quarantine's reasons."""
    changelog = spark.read.format("delta").load(settings.changelog_uri())
    seen = Counter((r["_kafka_partition"], r["_kafka_offset"]) for r in changelog.collect())
    quarantine = spark.read.format("delta").load(settings.quarantine_uri())
    return seen, sorted(r["reason"] for r in quarantine.collect())


REASONS = sorted(["no Avro single-object marker C3 01", "corrupt Avro body", "shorter than the single-object header"])


async def test_every_record_lands_once_and_the_mirror_query_follows(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = await _topic(kafka_bootstrap, 600, seed=5)
    settings = _settings(topic, tmp_path)
    batches: list[writer.WriterBatch] = []
    await _write(settings, kafka_bootstrap, batches)

    seen, reasons = _landed(spark, settings)
    assert len(seen) == 600 and set(seen.values()) == {1}
    assert reasons == REASONS
    assert len(batches) >= 4 and sum(b.written.changelog_rows for b in batches) == 600
    assert all(b.written.visible_at_s is not None for b in batches if b.written.changelog_rows)

    await _write(settings, kafka_bootstrap)  # a second run: everything is written already
    assert _landed(spark, settings) == (seen, reasons)

    # The Spark mirror query reads the changelog delta-rs wrote, as it reads its own.
    mirrors = settings.model_copy(update={"queries": "mirrors"})
    await asyncio.to_thread(job.run, spark, mirrors, kafka_settings(kafka_bootstrap))
    frames = {
        f"bench.t{i:02d}": spark.read.format("delta").load(settings.mirror_uri(f"bench.t{i:02d}"))
        for i in range(TABLES)
    }
    assert truth_mismatches(frame_ids(frames), events=600, seed=5, tables=TABLES, database="bench") == []


async def test_a_crash_between_the_quarantine_and_the_changelog_commit_loses_and_doubles_nothing(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = await _topic(kafka_bootstrap, 200, seed=6)
    settings = _settings(topic, tmp_path, max_offsets_per_trigger=10_000)
    real = delta_rs.write_deltalake  # type: ignore[attr-defined]  # the module's import, replaced for the test

    def crash_on_changelog(uri: str, *args: Any, **kwargs: Any) -> None:
        if uri == settings.changelog_uri():
            raise RuntimeError("killed between the two commits")
        real(uri, *args, **kwargs)

    monkeypatch.setattr(delta_rs, "write_deltalake", crash_on_changelog)
    with pytest.raises(RuntimeError, match="killed between"):
        await _write(settings, kafka_bootstrap)
    monkeypatch.setattr(delta_rs, "write_deltalake", real)
    quarantine = spark.read.format("delta").load(settings.quarantine_uri())
    assert quarantine.count() == len(GARBAGE)  # committed before the crash

    await _write(settings, kafka_bootstrap)
    seen, reasons = _landed(spark, settings)
    assert len(seen) == 200 and set(seen.values()) == {1}
    assert reasons == REASONS  # not quarantined twice


async def test_the_writer_continues_a_changelog_the_spark_sink_began(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    topic = await _topic(kafka_bootstrap, 300, seed=7, garbage=True)
    settings = _settings(topic, tmp_path)
    spark_only = settings.model_copy(update={"queries": "changelog"})
    await asyncio.to_thread(job.run, spark, spark_only, kafka_settings(kafka_bootstrap))
    await _produce(kafka_bootstrap, topic, 300, 500, seed=7)

    await _write(settings, kafka_bootstrap)
    seen, reasons = _landed(spark, settings)
    assert len(seen) == 500 and set(seen.values()) == {1}
    assert reasons == REASONS
    await _produce(kafka_bootstrap, topic, 500, 550, seed=7, garbage=True)
    await _write(settings, kafka_bootstrap)  # from its own transactions now
    seen, reasons = _landed(spark, settings)
    assert len(seen) == 550 and set(seen.values()) == {1}
    assert reasons == sorted(REASONS * 2)

    # Back to the Spark changelog query: it refuses the lake another writer wrote, until a new checkpoint adopts it.
    with pytest.raises(app_ids.LakeOwnershipError, match="writer-app/"):
        await asyncio.to_thread(job.run, spark, spark_only, kafka_settings(kafka_bootstrap))
    adopting = spark_only.model_copy(update={"adopt_lake": True, "checkpoint_uri": (tmp_path / "new").as_uri()})
    await asyncio.to_thread(job.run, spark, adopting, kafka_settings(kafka_bootstrap))
    assert _landed(spark, settings) == (seen, reasons)


async def test_binlake_sink_runs_the_writer_in_a_process_without_spark(
    kafka_bootstrap: str, spark: SparkSession, tmp_path: Path
) -> None:
    """``binlake sink`` with BINLAKE_SINK_CHANGELOG_WRITER=python: the changelog, its metrics and health, no
    JVM, and a clean stop on SIGTERM."""
    topic = await _topic(kafka_bootstrap, 300, seed=8)
    settings = _settings(topic, tmp_path)
    env = sink_env(
        settings,
        kafka_bootstrap,
        BINLAKE_SINK_QUERIES="changelog",
        BINLAKE_SINK_CHANGELOG_WRITER="python",
        BINLAKE_SINK_TRIGGER_INTERVAL_S="0.2",
    )
    output = tmp_path / "sink.log"
    with output.open("w") as log_file:
        process = subprocess.Popen(binlake_command("sink"), env=env, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        started: dict[str, Any] = {}
        deadline = time.monotonic() + 60
        while not started and time.monotonic() < deadline and process.poll() is None:
            lines = [line for line in output.read_text().splitlines() if '"sink started"' in line]
            started = json.loads(lines[0]) if lines else {}
            await asyncio.sleep(0.2)
        assert started.get("changelog_writer") == "python", output.read_text()
        port = int(started["metrics_port"])
        deadline = time.monotonic() + 60
        scraped: dict[Any, float] = {}
        while time.monotonic() < deadline:
            scraped = _samples((await asyncio.to_thread(_get, port, "/metrics"))[1])
            rows = _by_label(scraped, "binlake_sink_changelog_rows_total", "table", "op")
            if sum(rows.values()) >= 300 and scraped.get(("binlake_sink_quarantined_rows_total", ()), 0) >= 3:
                break
            await asyncio.sleep(0.5)
        assert sum(_by_label(scraped, "binlake_sink_changelog_rows_total", "table", "op").values()) == 300
        assert scraped[("binlake_sink_input_rows_total", ())] == 303
        lag = _by_label(scraped, "binlake_sink_kafka_lag", "topic", "partition")
        assert set(lag) == {(topic, str(p)) for p in range(3)} and set(lag.values()) == {0.0}
        assert (await asyncio.to_thread(_get, port, "/readyz"))[0] == 200
        assert (await asyncio.to_thread(_get, port, "/healthz"))[0] == 200
        assert not [c for c in _children(process.pid) if "java" in c]  # no Spark: no JVM
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    seen, reasons = _landed(spark, settings)
    assert len(seen) == 300 and set(seen.values()) == {1}
    assert reasons == REASONS


def _children(pid: int) -> list[str]:
    """The command lines of ``pid``'s child processes."""
    found = subprocess.run(["ps", "-o", "args=", "--ppid", str(pid)], capture_output=True, text=True, check=False)
    return found.stdout.splitlines()
