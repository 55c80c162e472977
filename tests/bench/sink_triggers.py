"""What a micro-batch costs however few its events: the changelog query against the bare copy (``sink_bench``'s
``triggers`` part).

A sustained input with 1 s triggers makes a micro-batch a second, so a batch's fixed cost is paid every second
whatever the rate. Here both contenders copy the same topic (``BINLAKE_BENCH_SINK_TRIGGER_EVENTS``, default
50,000 events) in batches of ``BINLAKE_BENCH_SINK_TRIGGER_BATCH`` (default 2,500) events, available-now, each
once to warm up and once measured, into a lake of its own. Per contender: the driver JVM's CPU (user + system,
every thread: tasks, planning, JIT, GC) per batch and the wall time. ``ratio_changelog_vs_bare``: the changelog
query's CPU per batch over the bare copy's (the changelog decodes the envelope and writes typed columns, the
bare copy writes the raw records).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from pathlib import Path
from typing import Any

from binlake.shared.config.settings import KafkaSettings

TICK_S = 1 / os.sysconf("SC_CLK_TCK")


def jvm_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * TICK_S


def triggers(spark: Any, kafka: KafkaSettings, config: Any, tmp: Path) -> dict[str, Any]:
    """The part (module doc) on a fresh topic, with ``sink_bench``'s input and settings (``config``)."""
    from dataclasses import replace

    from binlake.spark_sink import job
    from tests.bench import sink_bench  # not at the top: sink_bench imports this module

    events = sink_bench._env_int("BINLAKE_BENCH_SINK_TRIGGER_EVENTS", 50_000)
    batch = sink_bench._env_int("BINLAKE_BENCH_SINK_TRIGGER_BATCH", 2_500)
    small = replace(config, max_offsets_per_trigger=batch)
    topic = f"bench-sink-triggers-{os.urandom(4).hex()}"
    asyncio.run(sink_bench.create_topic(kafka.bootstrap_servers, topic))
    asyncio.run(sink_bench.produce(kafka.bootstrap_servers, topic, sink_bench.generate(events, seed=31)))
    pid = int(spark.sparkContext._gateway.proc.pid)  # spark-submit execs the driver JVM in this process

    def bare(lake: Path) -> None:
        sink_bench.bare_copy(spark, kafka, small, topic, lake)

    def changelog(lake: Path) -> None:
        settings = sink_bench._sink_settings(small, lake=lake.as_uri(), topic=topic, queries="changelog")
        job.run(spark, settings, kafka)

    batches = -(-events // batch)
    found: dict[str, Any] = {"events": events, "batch_events": batch, "batches": batches}
    for name, run in (("bare_copy", bare), ("changelog", changelog)):
        run(tmp / f"triggers-{name}-warm")
        lake = tmp / f"triggers-{name}"
        cpu, started = jvm_cpu_s(pid), time.perf_counter()
        run(lake)
        seconds, used = time.perf_counter() - started, jvm_cpu_s(pid) - cpu
        found[name] = {
            "seconds": round(seconds, 2),
            "jvm_cpu_s": round(used, 2),
            "jvm_cpu_s_per_batch": round(used / batches, 3),
        }
        for folder in (lake, tmp / f"triggers-{name}-warm"):
            shutil.rmtree(folder, ignore_errors=True)
    bare_cpu = found["bare_copy"]["jvm_cpu_s"]
    found["ratio_changelog_vs_bare"] = round(found["changelog"]["jvm_cpu_s"] / bare_cpu, 2) if bare_cpu else None
    return found
