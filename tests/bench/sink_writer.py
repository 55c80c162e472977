"""Sustained freshness of the changelog written without Spark (``spark_sink.changelog.writer``).

A producer thread sends canonical events at a steady rate (``PacedProducer``,
``ts_ms`` = send time) while the writer runs in this process on a
``BINLAKE_BENCH_SINK_TRIGGER_S`` trigger and the mirror query runs as a
``binlake sink`` process of its own (``BINLAKE_SINK_QUERIES=mirrors``, nice
10, its 30 s trigger): the deployment docs/spark-sink.md describes. An
event's freshness is the wall time at which the writer's changelog commit
holding it became visible minus its ``ts_ms`` (target p99 < 5 s), over the
events sent after the first ``BINLAKE_BENCH_SINK_WARMUP_S`` seconds.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from binlake.shared.config.settings import KafkaSettings
from tests.bench import sink_bench, sink_sustained
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env

TARGET_P99_S = 5.0


def freshness(kafka: KafkaSettings, config: Any, topic: str, tmp: Path) -> dict[str, Any]:
    """Run the writer and the mirror process under ``config.rate`` events/s for ``config.seconds``."""
    from binlake.spark_sink.changelog import writer

    items = sink_bench.encode_events(int(config.rate * config.seconds), seed=13)
    settings = sink_bench._sink_settings(
        config,
        lake=(tmp / "lake").as_uri(),
        topic=topic,
        trigger="processing-time",
        trigger_interval_s=config.trigger_s,
        max_offsets_per_trigger=None,
    )
    batches: list[writer.WriterBatch] = []
    stop = asyncio.Event()
    loops: list[asyncio.AbstractEventLoop] = []
    failures: list[BaseException] = []

    def run_writer() -> None:
        async def main() -> None:
            loops.append(asyncio.get_running_loop())
            await writer.run(settings, kafka, "bench-writer", stop=stop, on_batch=batches.append)

        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    thread = threading.Thread(target=run_writer, name="bench-writer", daemon=True)
    thread.start()
    while not loops and thread.is_alive():
        time.sleep(0.1)
    changelog = tmp / "lake" / "changelog" / "_delta_log"
    while not changelog.exists() and thread.is_alive():
        time.sleep(0.1)  # the writer creates the changelog; the mirror process waits for it anyway
    env = sink_env(
        settings,
        kafka.bootstrap_servers,
        BINLAKE_SINK_QUERIES="mirrors",
        BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S="30",
        BINLAKE_SINK_LOG_LEVEL="WARN",
    )
    with (tmp / "mirrors.log").open("w") as log:
        mirrors = subprocess.Popen(["nice", "-n", "10", *binlake_command("sink")], env=env, stdout=log, stderr=log)
    producer = sink_bench.PacedProducer(kafka.bootstrap_servers, topic, items, config.rate)
    try:
        producer.start()
        producer.join()
        deadline = time.monotonic() + max(120, config.seconds)
        while time.monotonic() < deadline and sum(b.written.changelog_rows for b in batches) < len(items):
            time.sleep(0.5)
        caught_up_after_s = time.time() - producer.finished_at
    finally:
        if loops:
            loops[0].call_soon_threadsafe(stop.set)
        thread.join(60)
        mirrors.send_signal(signal.SIGTERM)
        try:
            mirrors.wait(120)
        except subprocess.TimeoutExpired:
            mirrors.kill()
            mirrors.wait()
    if failures:
        raise RuntimeError(f"the changelog writer failed: {failures[0]!r}") from failures[0]
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
        "mirror_process_batches": mirror_batches,
        "cpus": os.cpu_count(),
    }
