"""What a mirror batch costs in CPU, split into a fixed part per batch and a part per event (``sink_bench`` cost part).

One lake, rounds of input (``BINLAKE_BENCH_SINK_COST_ROUNDS``, events per round; default 150,000, 150,000 and
600,000): each round is produced, then the changelog query and then the mirror query run available-now,
alone, so each round's mirror query applies that round in one mirror batch. The first round creates the
mirrors; the later ones MERGE or rewrite existing mirrors, as a sustained input does. Per round: the wall
time and the whole machine's busy CPU (``MachineCpu``: every process counts, the broker's too, which is idle
meanwhile) of each query. The last two rounds give a line ``cpu = fixed + per_event * events`` through their
mirror batches: ``fixed_core_s`` is what a mirror batch costs however few its events, ``per_event_ms`` what
each event adds. With them, a sustained input of R events/s and a mirror batch every T seconds needs
``R * per_event_ms / 1000 + fixed_core_s / T`` cores for its mirrors.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from binlake.shared.config.settings import KafkaSettings
from tests.bench.sink_sustained import MachineCpu

DEFAULT_ROUNDS = (150_000, 150_000, 600_000)


def rounds_from_env() -> tuple[int, ...]:
    text = os.environ.get("BINLAKE_BENCH_SINK_COST_ROUNDS")
    return tuple(int(n) for n in text.split(",")) if text else DEFAULT_ROUNDS


def _timed(run: Callable[[], None], events: int) -> dict[str, Any]:
    started, cpu_from = time.perf_counter(), MachineCpu.now()
    run()
    cpu = MachineCpu.now().since(cpu_from, events)
    return {"seconds": round(time.perf_counter() - started, 2), **cpu}


def line_through(points: list[tuple[int, float]]) -> dict[str, float | None]:
    """``fixed_core_s`` and ``per_event_ms`` of the line through the last two (events, busy core-seconds)
    points (None when their event counts are equal)."""
    (n1, c1), (n2, c2) = points[-2], points[-1]
    if n1 == n2:
        return {"fixed_core_s": None, "per_event_ms": None}
    slope = (c2 - c1) / (n2 - n1)
    return {"fixed_core_s": round(c1 - slope * n1, 1), "per_event_ms": round(slope * 1000, 4)}


def cost(spark: Any, kafka: KafkaSettings, config: Any, tmp: Path) -> dict[str, Any]:
    """The rounds (see the module's doc) on a fresh topic and a lake under ``tmp``, with ``sink_bench``'s input
    and settings (``config``: its ``BenchConfig``)."""
    from binlake.spark_sink import job
    from tests.bench import sink_bench  # not at the top: sink_bench imports this module

    bootstrap = kafka.bootstrap_servers
    lake = tmp / "cost"
    topic = f"bench-sink-cost-{os.urandom(4).hex()}"
    asyncio.run(sink_bench.create_topic(bootstrap, topic))
    rounds = rounds_from_env()
    items = sink_bench.generate(sum(rounds), seed=29)

    def settings_of(queries: str) -> Any:
        return sink_bench._sink_settings(config, lake=lake.as_uri(), topic=topic, queries=queries)

    found: list[dict[str, Any]] = []
    sent = 0
    for events in rounds:
        asyncio.run(sink_bench.produce(bootstrap, topic, items[sent : sent + events]))
        sent += events
        reports: list[Any] = []
        changelog = _timed(partial(job.run, spark, settings_of("changelog"), kafka), events)
        mirrors = _timed(partial(job.run, spark, settings_of("mirrors"), kafka, on_mirror_batch=reports.append), events)
        applied = sum(r.rows for r in reports)
        if applied != events:
            raise RuntimeError(f"the mirror query read {applied} changelog rows of a round of {events} events")
        steps: dict[str, float] = {}
        for report in reports:
            for name, seconds in report.steps.seconds.items():
                steps[name] = round(steps.get(name, 0.0) + seconds, 1)
        found.append(
            {
                "events": events,
                "changelog": changelog,
                "mirrors": mirrors,
                "mirror_batches": len(reports),
                "steps": steps,
            }
        )
    del items
    shutil.rmtree(lake, ignore_errors=True)
    existing = [(r["events"], r["mirrors"]["busy_core_s"]) for r in found[1:]]
    return {
        "rounds": found,
        # Through the rounds into existing mirrors (the first creates them).
        "mirror_batch_cpu": line_through(existing) if len(existing) >= 2 else None,
    }
