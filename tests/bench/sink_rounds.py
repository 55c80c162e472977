"""Many tables in steady state: rounds of input into existing mirrors, with and without deferred tails
(``sink_bench`` rounds part).

Per case (1 or 100 tables; ``BINLAKE_BENCH_SINK_SCALE_EVENTS`` events per case, default 20,000) and mode
(``mirror_defer_rows`` 0, every batch MERGEs every table it touches; or ``BINLAKE_BENCH_SINK_DEFER_ROWS``,
default 1,000): a first run creates the mirrors (not timed), then ``BINLAKE_BENCH_SINK_ROUNDS`` rounds
(default 5) each produce a share of the events and run one changelog batch and one mirror batch, as a running
sink's triggers would, leaving deferred tails to the next round (``mirror.tails``). After the last round the
remaining tails are MERGEd (``flush_s``, timed too: the deferred work is paid there). ``total_s`` is the
rounds plus the flush: what the events cost until every mirror holds them.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from binlake.shared.config.settings import KafkaSettings
from tests.support.spark_fixtures import run_sink

TABLE_CASES = (1, 100)


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


def _case(
    spark: Any,
    kafka: KafkaSettings,
    config: Any,
    lake: Path,
    topic: str,
    *,
    tables: int,
    events: int,
    count: int,
    defer_rows: int,
) -> dict[str, Any]:
    """One case: the mirrors made by a first run, then ``count`` timed rounds of ``events // count`` events,
    then the timed MERGE of the tails left."""
    from binlake.spark_sink import job
    from tests.bench import sink_bench  # not at the top: sink_bench imports this module

    asyncio.run(sink_bench.create_topic(kafka.bootstrap_servers, topic))
    settings = sink_bench._sink_settings(
        config,
        lake=lake.as_uri(),
        topic=topic,
        max_offsets_per_trigger=events * 2,
        mirror_defer_rows=defer_rows,
        mirror_defer_max_s=3600.0,
    )
    asyncio.run(
        sink_bench.produce(
            kafka.bootstrap_servers, topic, sink_bench.generate(events // count, seed=100, tables=tables)
        )
    )
    run_sink(spark, settings, kafka, keep_tails=False)
    seconds: list[float] = []
    for i in range(count):
        items = sink_bench.generate(events // count, seed=101 + i, tables=tables)
        asyncio.run(sink_bench.produce(kafka.bootstrap_servers, topic, items))
        started = time.perf_counter()
        run_sink(spark, settings, kafka, keep_tails=True)
        seconds.append(round(time.perf_counter() - started, 2))
    ids = job.owned_app_ids(spark, settings)
    started = time.perf_counter()
    job.flush_mirror_tails(spark, settings, ids.mirrors, threading.Lock(), every=True)
    flush_s = round(time.perf_counter() - started, 2)
    shutil.rmtree(lake, ignore_errors=True)
    return {"round_s": seconds, "flush_s": flush_s, "total_s": round(sum(seconds) + flush_s, 2)}


def rounds(spark: Any, kafka: KafkaSettings, config: Any, tmp: Path) -> dict[str, Any]:
    """The cases (module doc), with ``sink_bench``'s input and settings (``config``: its ``BenchConfig``)."""
    count = _env_int("BINLAKE_BENCH_SINK_ROUNDS", 5)
    defer_rows = _env_int("BINLAKE_BENCH_SINK_DEFER_ROWS", 1_000)
    events = config.scale_events
    suffix = os.urandom(4).hex()
    out: dict[str, Any] = {"rounds": count, "events_per_case": events, "defer_rows": defer_rows, "cases": {}}
    # A warm-up of every path (creation, MERGE, deferral, flush) on a small case: no case pays the JVM's first
    # runs of them alone (the first case measured took 12 s for a round that later took 7 s).
    _case(
        spark,
        kafka,
        config,
        tmp / "rounds-warm",
        f"bench-sink-rounds-warm-{suffix}",
        tables=4,
        events=2_000,
        count=1,
        defer_rows=defer_rows,
    )
    for tables in TABLE_CASES:
        for mode, rows in (("merge_every_batch", 0), ("deferred", defer_rows)):
            topic = f"bench-sink-rounds{tables}-{mode}-{suffix}"
            lake = tmp / f"rounds-{tables}-{mode}"
            found = _case(spark, kafka, config, lake, topic, tables=tables, events=events, count=count, defer_rows=rows)
            out["cases"].setdefault(str(tables), {})[mode] = found
    cases = out["cases"]
    for mode in ("merge_every_batch", "deferred"):
        first, last = (cases[str(t)][mode]["total_s"] for t in (TABLE_CASES[0], TABLE_CASES[-1]))
        out[f"ratio_{TABLE_CASES[-1]}_vs_{TABLE_CASES[0]}_{mode}"] = round(last / first, 2) if first else None
    return out
