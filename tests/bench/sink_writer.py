"""Sustained freshness of the changelog written without Spark (``spark_sink.changelog.writer``).

A producer thread sends canonical events at a steady rate (``PacedProducer``,
``ts_ms`` = send time) while the writer runs in a process of its own (as
deployed; its batches reported back through a queue) on a
``BINLAKE_BENCH_SINK_TRIGGER_S`` trigger and the mirrors are written by a
``binlake sink`` process of its own (``BINLAKE_SINK_QUERIES=mirrors``, nice
10): the mirror writer without Spark on a ``BINLAKE_BENCH_SINK_MIRROR_TRIGGER_S``
trigger (``BINLAKE_BENCH_SINK_MIRROR_WRITER=python``, the default) or the Spark
mirror query on a 30 s one (``spark``): the deployments docs/spark-sink.md describes. An
event's freshness is the wall time at which the writer's changelog commit
holding it became visible minus its ``ts_ms`` (target p99 < 5 s), over the
events sent after the first ``BINLAKE_BENCH_SINK_WARMUP_S`` seconds.

Beside them, as in the Spark sink's sustained part (``sink_sustained``): a
reader (``BINLAKE_BENCH_SINK_READER``: DuckDB in a process of its own, or
this process' SparkSession) reads every table's current state
(merge on read) ``BINLAKE_BENCH_SINK_READ_PAUSE_S`` after its previous read
(target p99 < 10 s), the mirrors' lag is polled from the mirror process'
metrics every second (``MirrorPoller``; bounded: the second half of the input
against the first), every table's current state is compared with the
generator's truth at the end, and the resident memory of this process (with
its JVM) and of its children (the writer, the mirror process) is sampled.
"""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import os
import shutil
import signal
import subprocess
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from binlake.shared.config.settings import KafkaSettings
from tests.bench import sink_bench, sink_sustained
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env

TARGET_P99_S = 5.0
TARGET_CURRENT_P99_S = 10.0
SEED = 13


def freshness(spark: Any, kafka: KafkaSettings, config: Any, topic: str, tmp: Path) -> dict[str, Any]:
    """Run the writer and the mirror process under ``config.rate`` events/s for ``config.seconds``, reading
    the current states with ``spark`` meanwhile."""
    from binlake.spark_sink.changelog import writer

    items = sink_bench.encode_events(int(config.rate * config.seconds), seed=SEED)
    settings = sink_bench._sink_settings(
        config,
        lake=(tmp / "lake").as_uri(),
        topic=topic,
        trigger="processing-time",
        trigger_interval_s=config.trigger_s,
        max_offsets_per_trigger=None,
    )
    context = multiprocessing.get_context("spawn")
    inbox: multiprocessing.Queue[Any] = context.Queue()
    stop = context.Event()
    batches: list[writer.WriterBatch] = []
    failures: list[BaseException] = []
    # The writer in a process of its own, as deployed (``binlake sink``, queries=changelog): in this process its
    # Python work would share the interpreter lock with the paced producer's.
    child = context.Process(
        target=_write_changelog, args=(settings, kafka, inbox, stop), name="bench-writer", daemon=True
    )
    child.start()

    def collect() -> None:
        while True:
            report = inbox.get()
            if report is None:
                return
            if isinstance(report, BaseException):
                failures.append(report)
                return
            batches.append(report)

    thread = threading.Thread(target=collect, name="bench-writer-reports", daemon=True)
    thread.start()
    changelog = tmp / "lake" / "changelog" / "_delta_log"
    while not changelog.exists() and child.is_alive():
        time.sleep(0.1)  # the writer creates the changelog; the mirror process waits for it anyway
    port = sink_sustained.free_port()
    mirror_env = {"BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S": "30"}
    if config.mirror_writer == "python":
        mirror_env = {
            "BINLAKE_SINK_MIRROR_WRITER": "python",
            "BINLAKE_SINK_TYPE_WIDENING": "false",
            "BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S": str(config.mirror_trigger_s),
        }
    env = sink_env(
        settings,
        kafka.bootstrap_servers,
        BINLAKE_SINK_QUERIES="mirrors",
        BINLAKE_SINK_LOG_LEVEL="WARN",
        BINLAKE_SINK_METRICS_PORT=str(port),
        **mirror_env,
    )
    with (tmp / "mirrors.log").open("w") as log:
        mirrors = subprocess.Popen(["nice", "-n", "10", *binlake_command("sink")], env=env, stdout=log, stderr=log)
    tables = [f"bench.t{index:02d}" for index in range(sink_bench.TABLES)]
    poller = sink_sustained.MirrorPoller(port, tables)
    reader = sink_sustained.reader_for(
        spark, settings, tables, pause_s=config.read_pause_s, engine=config.reader, nice=config.reader_nice
    )
    rss = sink_sustained.RssSampler()
    producer = sink_bench.PacedProducer(kafka.bootstrap_servers, topic, items, config.rate)
    try:
        poller.start()
        rss.start()
        reader.start()
        producer.start()
        producer.join()
        deadline = time.monotonic() + max(120, config.seconds)
        while time.monotonic() < deadline and sum(b.written.changelog_rows for b in batches) < len(items):
            time.sleep(0.5)
        caught_up_after_s = time.time() - producer.finished_at
    finally:
        reader.stop()
        poller.stop()
        memory = rss.stop()
        stop.set()
        child.join(60)
        if child.is_alive():
            child.kill()
        thread.join(10)
        mirrors.send_signal(signal.SIGTERM)
        try:
            mirrors.wait(120)
        except subprocess.TimeoutExpired:
            mirrors.kill()
            mirrors.wait()
    if failures:
        raise RuntimeError(f"the changelog writer failed: {failures[0]!r}") from failures[0]
    reader.check()
    written = sum(b.written.changelog_rows for b in batches)
    commits: list[tuple[float, int]] = []
    total = 0
    for batch in batches:
        total += batch.written.changelog_rows
        if batch.written.visible_at_s is not None:
            commits.append((batch.written.visible_at_s, total))
    steady_from_ms = (producer.started_at + config.warmup_s) * 1000
    samples = sink_sustained.commit_freshness(producer.ticks, commits, sent_from_ms=steady_from_ms)
    gaps = sorted(b[0] - a[0] for a, b in itertools.pairwise(commits))
    mirror_batches = (tmp / "mirrors.log").read_text().count('"mirror batch ')
    half_ms = (producer.started_at + producer.finished_at) / 2 * 1000
    reports = [b.written for b in batches]
    read_seconds = sorted(ended - started for started, ended, _ in reader.reads)
    mirror_commits = sorted({commit for _, _, commit in poller.polls if commit is not None})
    wrong = (
        sink_sustained.truth_mismatches(
            reader.ids(),
            events=len(items),
            seed=SEED,
            tables=sink_bench.TABLES,
            database="bench",
        )
        if written == len(items)
        else ["not caught up: not compared"]
    )
    reader.close()
    return {
        "rate": config.rate,
        "seconds": config.seconds,
        "trigger_s": config.trigger_s,
        "events": len(items),
        "written": written,
        "batches": len(batches),
        "freshness_steady": sink_bench._summary(samples),
        "target_p99_s": TARGET_P99_S,
        "commit_gap_s_p50_max": [round(gaps[len(gaps) // 2], 2), round(gaps[-1], 2)] if gaps else None,
        "caught_up_s_after_input_stopped": round(caught_up_after_s, 1) if written == len(items) else None,
        "mirror_writer": config.mirror_writer,
        "mirror_process_batches": mirror_batches,
        # The mirror process' own figures, polled from its /metrics (nice 10; the mirror writer without Spark on a
        # ``mirror_trigger_s`` trigger, or the Spark mirror query on a 30 s one).
        "mirror_freshness_steady": sink_bench._summary(
            sink_sustained.mirror_freshness(producer.ticks, poller.polls, sent_from_ms=steady_from_ms)
        ),
        # Bounded lag: the mirrors' freshness over the second half of the input against the first half.
        "mirror_freshness_first_half": sink_bench._summary(
            sink_sustained.mirror_freshness(
                producer.ticks, poller.polls, sent_from_ms=steady_from_ms, sent_before_ms=half_ms
            )
        ),
        "mirror_freshness_second_half": sink_bench._summary(
            sink_sustained.mirror_freshness(producer.ticks, poller.polls, sent_from_ms=half_ms)
        ),
        "mirror_commit_gap_s": [round(b - a, 1) for a, b in itertools.pairwise(mirror_commits)],
        "mirror_seconds_by_step": poller.step_seconds(),
        "current_state": {
            "reader": config.reader,
            "reader_nice": config.reader_nice,
            "read_pause_s": config.read_pause_s,
            "reads": len(reader.reads),
            "reader_peak_rss_mib": getattr(reader, "peak_rss_mib", None),
            "read_s_p50_max": [round(read_seconds[len(read_seconds) // 2], 2), round(read_seconds[-1], 2)]
            if read_seconds
            else None,
            "freshness_steady": sink_bench._summary(
                list(sink_sustained.read_freshness(reports, reader.reads, sent_from_ms=steady_from_ms))
            ),
            "target_p99_s": TARGET_CURRENT_P99_S,
            "events_no_read_saw": sink_sustained.unseen_events(reports, reader.reads),
            "tables_not_equal_to_truth": wrong,
        },
        # This process (the reader's SparkSession and its JVM) and its children (the writer, the mirror process).
        "rss": memory,
        "cpus": os.cpu_count(),
    }


def merge_on_read(
    spark: Any, kafka: KafkaSettings, config: Any, topic: str, lake: Path, *, tables: list[str]
) -> dict[str, Any]:
    """``sink_bench.merge_on_read`` with the changelog written without Spark: the writer, available-now
    (``until_caught_up``), in this process; then every table's current state read in full with ``spark``;
    then the mirror query, available-now, over the writer's changelog; then the mirror writer without Spark over
    a copy of that changelog (a lake of its own). Each timed."""
    from binlake.spark_sink import job
    from binlake.spark_sink.changelog import writer
    from binlake.spark_sink.mirror import current_state

    settings = sink_bench._sink_settings(
        config, lake=lake.as_uri(), topic=topic, queries="changelog", changelog_writer="python"
    )
    batches: list[writer.WriterBatch] = []
    started = time.perf_counter()
    asyncio.run(
        writer.run(settings, kafka, "bench-writer", stop=asyncio.Event(), on_batch=batches.append, until_caught_up=True)
    )
    changelog_s = time.perf_counter() - started
    frames = current_state.current_tables(spark, settings, tables)
    rows = sum(sink_sustained.read_in_full(frame) for frame in frames.values())
    current_s = time.perf_counter() - started - changelog_s
    # As the mirror process of this deployment runs it (queries=mirrors): a checkpoint of its own.
    mirror_settings = settings.model_copy(update={"queries": "mirrors", "changelog_writer": "spark"})
    ids = job.owned_app_ids(spark, mirror_settings)
    mirrors = job.start_mirrors(spark, mirror_settings, ids.mirrors)
    mirrors.awaitTermination()
    if mirrors.exception() is not None:
        raise RuntimeError(f"the mirror query failed: {mirrors.exception()}")
    mirrors_s = time.perf_counter() - started - changelog_s - current_s
    # The mirror writer without Spark over the same changelog (a copy, in a lake of its own), timed alone.
    python_lake = lake.with_name(f"{lake.name}-python-mirrors")
    shutil.copytree(lake / "changelog", python_lake / "changelog")
    python_settings = settings.model_copy(
        update={
            "lake_uri": python_lake.as_uri(),
            "queries": "mirrors",
            "changelog_writer": "spark",
            "mirror_writer": "python",
            "type_widening": False,
        }
    )
    python_started = time.perf_counter()
    python_batches = _mirrors_caught_up(python_settings)
    python_s = time.perf_counter() - python_started
    python_rows = sum(spark.read.format("delta").load(python_settings.mirror_uri(table)).count() for table in tables)
    return {
        "changelog_s": round(changelog_s, 3),
        "changelog_rows": sum(b.written.changelog_rows for b in batches),
        "writer_batches": len(batches),
        "current_read_s": round(current_s, 3),
        "current_rows": rows,
        "mirrors_written_s": round(mirrors_s, 3),
        "python_mirrors_written_s": round(python_s, 3),
        "python_mirror_batches": len(python_batches),
        "python_mirror_rows": python_rows,
    }


def scale_case(kafka: KafkaSettings, config: Any, topic: str, lake: Path) -> dict[str, Any]:
    """One case of ``sink_bench.scale`` without Spark: the changelog writer over the case's topic, available-now
    (``until_caught_up``), then the mirror writer without Spark over its changelog; each timed."""
    from binlake.spark_sink.changelog import writer

    settings = sink_bench._sink_settings(
        config,
        lake=lake.as_uri(),
        topic=topic,
        queries="changelog",
        changelog_writer="python",
        max_offsets_per_trigger=None,
    )
    batches: list[writer.WriterBatch] = []
    started = time.perf_counter()
    asyncio.run(
        writer.run(settings, kafka, "bench-writer", stop=asyncio.Event(), on_batch=batches.append, until_caught_up=True)
    )
    changelog_s = time.perf_counter() - started
    mirror_settings = settings.model_copy(
        update={"queries": "mirrors", "changelog_writer": "spark", "mirror_writer": "python", "type_widening": False}
    )
    mirror_batches = _mirrors_caught_up(mirror_settings)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 3),
        "changelog_s": round(changelog_s, 3),
        "mirrors_s": round(seconds - changelog_s, 3),
        "writer_batches": len(batches),
        "mirror_batches": len(mirror_batches),
        "changelog_rows": sum(b.written.changelog_rows for b in batches),
    }


def _mirrors_caught_up(settings: Any) -> list[Any]:
    """Run the mirror writer without Spark over ``settings``' lake until it has applied the whole changelog;
    return its batches (``follower.FollowedBatch``)."""
    from binlake.spark_sink.mirror import follower

    batches: list[follower.FollowedBatch] = []
    follower.run(settings, "bench-mirror-writer", stop=threading.Event(), on_batch=batches.append, until_caught_up=True)
    return batches


def _write_changelog(settings: Any, kafka: KafkaSettings, reports: Any, stop: Any) -> None:
    """The writer process: ``writer.run`` until ``stop`` is set, each batch put on ``reports``, then ``None``
    (or the exception it failed with)."""
    from binlake.spark_sink.changelog import writer

    async def main() -> None:
        stopped = asyncio.Event()

        async def watch() -> None:
            while not stop.is_set():
                await asyncio.sleep(0.1)
            stopped.set()

        watcher = asyncio.create_task(watch())
        try:
            await writer.run(settings, kafka, "bench-writer", stop=stopped, on_batch=reports.put)
        finally:
            watcher.cancel()

    try:
        asyncio.run(main())
    except BaseException:  # noqa: BLE001 - reported to the bench's process (as text: not every error pickles)
        reports.put(RuntimeError(traceback.format_exc()))
    else:
        reports.put(None)
