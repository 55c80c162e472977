"""``make bench``'s ``growth`` section: how cost grows with the work, each series side by side in one run.

1. **normalize** (``normalize``): canal-json messages of one row, through binlake's codec
   (``shared.normalize.codec_for``, best of ``BINLAKE_BENCH_GROWTH_CODEC_ROUNDS``) and the stdlib's
   ``json.loads`` + ``json.dumps`` of each message, on one core:

   - ``width``: rows of 5, 50 and 500 columns (``BINLAKE_BENCH_GROWTH_WIDTHS``) of common MySQL
     types with short values, 10% updates;
   - ``value_size``: rows of 5 columns, one of them a ``longtext`` of 10 B, 1 KiB, 100 KiB and
     1 MiB (``BINLAKE_BENCH_GROWTH_VALUE_BYTES``) of base64 text (lz4 cannot shrink it).

   Each case reads at most ``BINLAKE_BENCH_GROWTH_CODEC_MB`` MB of messages (and at most 20,000).
   ``kafka`` runs the same messages through the real runtime on the dev broker: the in-process
   normalizer (``shared.kafka.runtime.Normalizer``, production batch sizes, lz4) beside the aiokafka
   passthrough (``kafka_bench.Passthrough``: the same client and transactions doing no work), one
   round each after a small warm-up run of both, from a 3-partition input topic to a fresh
   4-partition unified topic; the clock stops when the group has committed every input offset. The
   1 MiB value is over Kafka's default ``max.message.bytes`` (1,048,588) once it is a message: the
   vendor's topic must take more (the bench's input topics of that series take 16 MiB), and the
   unified topic (default limit) refuses the canonical event. ``kafka.one_mib`` shows what the
   normalizer does then, for values lz4 cannot shrink and for values it can (the broker checks the
   compressed batch).

2. **sink** (``sink``, one SparkSession as ``sink_bench``'s):

   - ``tables``: batch time over 1, 10 and 100 source tables: ``sink_bench.scale``'s figures,
     taken from the same ``make bench`` run's ``spark_sink`` section when it has them, else measured
     here by calling it;
   - ``lake_size``: one batch of ``BINLAKE_BENCH_GROWTH_LAKE_CHANGES`` (5,000) generated updates
     spread over the keys of one table whose mirror holds ``BINLAKE_BENCH_GROWTH_LAKE_BASE`` (20,000)
     rows, and of one holding ``BINLAKE_BENCH_GROWTH_LAKE_ROWS`` (2,000,000): the sink issue's target
     is a mirror batch at most 1.5x as long on the large one. Both mirrors are made
     by the sink from the same 20,000 generated inserts; the big one then gets copies of those rows
     under other keys (``clone_key``), appended by Spark in the mirror's own schema, so 1M rows cost
     seconds, not an hour of sink batches. Each copy of an update is re-keyed to a random copy of
     its row. Per size: ``sink_bench.merge_on_read`` (the changelog batch; every current-state read
     of the table with the batch still in the changelog's tail, a count; the mirror batch), then
     current-state reads once the mirror holds it all: a count (``current_read_settled_s``; Spark reads
     only the columns it needs) and every column of every row (``current_read_settled_full_s``);
     ``merge``: Delta's operation metrics of the mirror batch's MERGE commit (``MERGE_METRICS``).

3. **memory** (``memory``): the real processes, ``binlake normalizer`` (canal-json, production
   settings) and ``binlake sink`` (the bench's Spark settings: ``local[*]``, 4 GB driver; the sink's
   own 10 s trigger), one pipeline: vendor topic -> normalizer -> unified topic -> sink. After a
   warm-up (500 messages through both), a producer sends generated canal-json messages (8 tables,
   13 columns) at each of ``BINLAKE_BENCH_GROWTH_RATES`` (1,000, then 10,000 messages/s) for
   ``BINLAKE_BENCH_GROWTH_SECONDS`` (60) each, to the same two processes. A thread reads
   ``/proc/<pid>/status`` of each process and its children (the sink's driver JVM, PySpark's
   workers) every second (``memory_summary``): ``peak_hwm_mib`` is the sum of the processes'
   ``VmHWM`` as of the rate's end (each its own peak since it started, start-up and earlier rates
   included, so an upper bound of the tree's peak), ``rss_max_mib`` / ``rss_median_mib`` the
   tree's ``VmRSS`` while the rate's input ran and until it was read; ``processes`` gives each
   process' ``VmHWM``. ``*_caught_up_after_s``: when each process had read all the input, from the
   input's end; ``kept_up``: within 30 s.

``load_average_before`` / ``_after`` show how busy the machine was around each part.

``python -m tests.bench.growth [--only normalize|sink|memory]`` starts its own broker and prints the
JSON; ``tests/bench/run.py`` runs it as the ``growth`` section.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import dataclasses
import functools
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any, Final

import orjson
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from binlake.shared.codec import avro
from binlake.shared.config.settings import NormalizerSettings, kafka_settings
from binlake.shared.event.values import integer
from binlake.shared.generate import render
from binlake.shared.generate.workload import Change, Workload
from binlake.shared.kafka.records import event_key, partition_for
from binlake.shared.normalize import Normalized, codec_for
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Parsed

FORMAT: Final = "canal-json"
PARTS: Final = ("normalize", "sink", "memory")
INPUT_PARTITIONS: Final = 3
OUTPUT_PARTITIONS: Final = 4
MIB: Final = 1024 * 1024
BIG_TOPIC: Final = {"max.message.bytes": str(16 * MIB)}
"""An input topic that takes 1 MiB values (Kafka's default ``max.message.bytes`` is 1,048,588)."""
CLONE_STRIDE: Final = 10**7
"""``clone_key``: how far apart the copies of a key are."""
LAKE_DATABASE: Final = "grow"
LAKE_TABLE: Final = f"{LAKE_DATABASE}.t00"


def _env_ints(name: str, default: str) -> list[int]:
    return [int(part) for part in os.environ.get(name, default).split(",") if part.strip()]


def _env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


def _env_float(name: str, default: float) -> float:
    return float(os.environ.get(name, str(default)))


@dataclass(frozen=True)
class GrowthConfig:
    widths: list[int] = field(default_factory=lambda: _env_ints("BINLAKE_BENCH_GROWTH_WIDTHS", "5,50,500"))
    value_bytes: list[int] = field(
        default_factory=lambda: _env_ints("BINLAKE_BENCH_GROWTH_VALUE_BYTES", f"10,1024,{100 * 1024},{MIB}")
    )
    codec_mb: float = field(default_factory=lambda: _env_float("BINLAKE_BENCH_GROWTH_CODEC_MB", 40.0))
    codec_rounds: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_GROWTH_CODEC_ROUNDS", 3))
    kafka_mb: float = field(default_factory=lambda: _env_float("BINLAKE_BENCH_GROWTH_KAFKA_MB", 80.0))
    max_events: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_GROWTH_MAX_EVENTS", 20_000))
    lake_base: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_GROWTH_LAKE_BASE", 20_000))
    lake_rows: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_GROWTH_LAKE_ROWS", 2_000_000))
    lake_changes: int = field(default_factory=lambda: _env_int("BINLAKE_BENCH_GROWTH_LAKE_CHANGES", 5_000))
    rates: list[int] = field(default_factory=lambda: _env_ints("BINLAKE_BENCH_GROWTH_RATES", "1000,10000"))
    seconds: float = field(default_factory=lambda: _env_float("BINLAKE_BENCH_GROWTH_SECONDS", 60.0))


def _load() -> list[float]:
    return [round(x, 1) for x in os.getloadavg()]


# ---------------------------------------------------------------- messages

WIDTH_KINDS: Final[tuple[tuple[str, int], ...]] = (
    ("int(11)", 4),
    ("varchar(64)", 12),
    ("decimal(12,2)", 3),
    ("datetime", 93),
    ("double", 8),
    ("tinyint(4)", -6),
    ("date", 91),
    ("bigint(20)", -5),
    ("text", -1),
)
"""The types of a wide row's columns after ``id``, in turn."""


def _value(rng: random.Random, mysql_type: str) -> str:
    """A short Canal value text of a ``WIDTH_KINDS`` type."""
    match mysql_type:
        case "int(11)":
            return str(rng.randrange(-(2**31), 2**31))
        case "varchar(64)":
            return f"customer-{rng.randrange(10**6)}"
        case "decimal(12,2)":
            return f"{rng.randrange(10**8)}.{rng.randrange(100):02d}"
        case "datetime":
            return f"2024-0{rng.randrange(1, 10)}-1{rng.randrange(10)} 1{rng.randrange(10)}:2{rng.randrange(10)}:00"
        case "double":
            return repr(rng.random() * 1000)
        case "tinyint(4)":
            return str(rng.randrange(100))
        case "date":
            return f"19{rng.randrange(50, 99)}-0{rng.randrange(1, 10)}-2{rng.randrange(8)}"
        case "bigint(20)":
            return str(rng.randrange(10**15))
        case _:
            return "some free text " * rng.randrange(1, 4)


def canal_message(
    columns: Sequence[tuple[str, str, int]], row: dict[str, str], number: int, old: dict[str, str] | None
) -> bytes:
    """One Canal flat message of one row (``columns``: name, MySQL type, JDBC code; ``id`` the key): an INSERT,
    or an UPDATE whose ``old`` holds the prior values of the columns it changed."""
    return orjson.dumps(
        {
            "data": [row],
            "database": LAKE_DATABASE,
            "es": 1_700_000_000_000 + number,
            "id": number + 1,
            "isDdl": False,
            "mysqlType": {name: mysql_type for name, mysql_type, _ in columns},
            "old": None if old is None else [old],
            "pkNames": ["id"],
            "sql": "",
            "sqlType": {name: jdbc for name, _, jdbc in columns},
            "table": "growth",
            "ts": 1_700_000_000_100 + number,
            "type": "INSERT" if old is None else "UPDATE",
        }
    )


def wide_lines(width: int, count: int, seed: int = 7) -> list[bytes]:
    """``count`` messages of a ``width``-column row (``id`` and ``c001``... of ``WIDTH_KINDS``), 10% updates."""
    rng = random.Random(seed)
    columns = [("id", "bigint(20) unsigned", -5)]
    columns += [(f"c{i:03d}", *WIDTH_KINDS[(i - 1) % len(WIDTH_KINDS)]) for i in range(1, width)]
    pools = {kind: [_value(rng, kind) for _ in range(64)] for kind, _ in WIDTH_KINDS}
    out = []
    for number in range(count):
        row = {"id": str(number + 1)} | {name: rng.choice(pools[kind]) for name, kind, _ in columns[1:]}
        changed = columns[1] if width > 1 and rng.random() < 0.1 else None
        old = None if changed is None else {changed[0]: rng.choice(pools[changed[1]])}
        out.append(canal_message(columns, row, number, old))
    return out


SIZED_COLUMNS: Final = (
    ("id", "bigint(20) unsigned", -5),
    ("qty", "int(11)", 4),
    ("name", "varchar(64)", 12),
    ("updated_at", "datetime", 93),
    ("body", "longtext", 2005),
)


def sized_lines(value_bytes: int, count: int, seed: int = 7, *, compressible: bool = False) -> list[bytes]:
    """``count`` INSERT messages of a 5-column row whose ``body`` holds ``value_bytes`` bytes of text: base64 of
    random bytes (each message's from its own place; lz4 cannot shrink it), or, ``compressible``, a phrase
    repeated."""
    rng = random.Random(seed)
    if compressible:
        phrase = "lorem ipsum dolor sit amet, "
        pool = phrase * (value_bytes // len(phrase) + 2)
    else:
        pool = base64.b64encode(rng.randbytes((value_bytes + MIB) * 3 // 4 + 3)).decode()
    out = []
    for number in range(count):
        at = 0 if compressible else rng.randrange(len(pool) - value_bytes + 1)
        row = {
            "id": str(number + 1),
            "qty": str(rng.randrange(1000)),
            "name": f"customer-{rng.randrange(10**6)}",
            "updated_at": "2024-10-11 12:13:14",
            "body": pool[at : at + value_bytes],
        }
        out.append(canal_message(SIZED_COLUMNS, row, number, None))
    return out


def _count(per_event_bytes: int, budget_mb: float, max_events: int, minimum: int = 8) -> int:
    return max(minimum, min(max_events, int(budget_mb * 1e6 / max(1, per_event_bytes))))


# ---------------------------------------------------------------- normalize: the codec


def _best_of(rounds: int, fn: Callable[[], None]) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - started)
    return best


def codec_case(lines: list[bytes], rounds: int) -> dict[str, Any]:
    """binlake's codec and the stdlib JSON round trip over ``lines``, side by side."""
    codec = codec_for(FORMAT, ParseContext(topic="bench"))

    def run() -> None:
        for number, line in enumerate(lines):
            outcome = codec(line, "bench", 0, number)
            if not isinstance(outcome, Normalized):
                raise RuntimeError(f"the codec rejected a generated message: {outcome}")

    def stdlib() -> None:
        for line in lines:
            json.dumps(json.loads(line))

    run()  # once to warm up
    codec_s = _best_of(rounds, run)
    stdlib_s = _best_of(rounds, stdlib)
    events, size = len(lines), sum(map(len, lines))
    return {
        "events": events,
        "message_bytes": round(size / events),
        "events_per_s": round(events / codec_s),
        "stdlib_json_events_per_s": round(events / stdlib_s),
        "mb_per_s": round(size / codec_s / 1e6, 1),
        "ratio_vs_stdlib_json": round(stdlib_s / codec_s, 2),
    }


def _relative(cases: dict[str, dict[str, Any]], field_name: str) -> dict[str, float]:
    """Each case's ``field_name`` over the first case's: how events/s falls as the work grows."""
    first = next(iter(cases.values()))[field_name]
    return {name: round(case[field_name] / first, 4) for name, case in cases.items()}


def normalize_codec(config: GrowthConfig) -> dict[str, Any]:
    width: dict[str, dict[str, Any]] = {}
    for columns in config.widths:
        probe = wide_lines(columns, 50)
        count = _count(sum(map(len, probe)) // len(probe), config.codec_mb, config.max_events)
        width[str(columns)] = {"columns": columns, **codec_case(wide_lines(columns, count), config.codec_rounds)}
    sizes: dict[str, dict[str, Any]] = {}
    for value_bytes in config.value_bytes:
        count = _count(value_bytes + 300, config.codec_mb, config.max_events)
        sizes[str(value_bytes)] = {
            "value_bytes": value_bytes,
            **codec_case(sized_lines(value_bytes, count), config.codec_rounds),
        }
    return {
        "width": width,
        "width_vs_first": _relative(width, "events_per_s"),
        "value_size": sizes,
        "value_size_vs_first": _relative(sizes, "events_per_s"),
    }


# ---------------------------------------------------------------- normalize: through Kafka


async def _create(bootstrap: str, topics: dict[str, int], config: dict[str, str] | None = None) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        await admin.create_topics([NewTopic(name, n, 1, topic_configs=config or {}) for name, n in topics.items()])
    finally:
        await admin.close()
    await asyncio.sleep(0.5)  # metadata reaches every listener a moment after creation


async def _produce(bootstrap: str, topic: str, items: Iterable[tuple[int, bytes, bytes]]) -> int:
    """(partition, key, value) in record batches (``sink_bench``'s producer: 16 MiB requests)."""
    from tests.bench import sink_bench

    producer = sink_bench._producer(bootstrap)
    await producer.start()
    try:
        return await sink_bench._send(producer, topic, items)
    finally:
        await producer.stop()


def _keyed(lines: Sequence[bytes], start: int = 0) -> Iterable[tuple[int, bytes, bytes]]:
    for i in range(len(lines)):
        n = start + i
        yield n % INPUT_PARTITIONS, f"grow.growth.{n}".encode(), lines[i]


async def _until_committed(
    bootstrap: str, group: str, topic: str, events: int, *, started: float, timeout_s: float = 600.0
) -> dict[str, Any]:
    """Poll ``group``'s committed offsets of ``topic`` until they reach ``events``; seconds from ``started``."""
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(INPUT_PARTITIONS)]
    await consumer.start()
    try:
        first: tuple[float, int] | None = None
        while True:
            done = sum([(await consumer.committed(tp)) or 0 for tp in tps])
            now = time.perf_counter()
            if done and first is None:
                first = (now - started, done)
            if done >= events:
                assert first is not None
                seconds = now - started
                steady_s, steady_events = seconds - first[0], events - first[1]
                return {
                    "seconds": round(seconds, 3),
                    "events_per_s": round(events / seconds),
                    "steady_events_per_s": round(steady_events / steady_s) if steady_s > 0 and steady_events else None,
                }
            if now - started > timeout_s:
                raise TimeoutError(f"only {done} of {events} input offsets committed after {timeout_s} s")
            await asyncio.sleep(0.05)
    finally:
        await consumer.stop()


async def _run_normalizer(bootstrap: str, topics: Any, tmp: Path, events: int) -> tuple[dict[str, Any], Any]:
    from binlake.shared.kafka.runtime import Normalizer
    from tests.support.pipeline import normalizer_settings

    defaults = NormalizerSettings.model_fields
    settings = normalizer_settings(FORMAT, topics, tmp, "UTC").model_copy(
        update={
            "batch_max_messages": defaults["batch_max_messages"].default,
            "batch_max_ms": defaults["batch_max_ms"].default,
        }
    )
    normalizer = Normalizer(settings, kafka_settings(bootstrap))
    started = time.perf_counter()
    task = asyncio.create_task(normalizer.run())
    try:
        timing = await _until_committed(bootstrap, topics.group, topics.vendor, events, started=started)
    finally:
        normalizer.stop()
        await asyncio.wait_for(task, 60)
    return timing, normalizer


async def _run_passthrough(bootstrap: str, topics: Any, events: int) -> dict[str, Any]:
    from tests.bench.kafka_bench import Passthrough

    passthrough = Passthrough(bootstrap, topics)
    started = time.perf_counter()
    task = asyncio.create_task(passthrough.run())
    try:
        return await _until_committed(bootstrap, topics.group, topics.vendor, events, started=started)
    finally:
        passthrough.stopping.set()
        await asyncio.wait_for(task, 60)


async def _fresh(bootstrap: str, name: str, vendor: str) -> Any:
    from tests.support import kafka_tools
    from tests.support.pipeline import Topics

    fresh = Topics.fresh(name)
    topics = Topics(vendor, fresh.events, fresh.dlq, fresh.group)
    await kafka_tools.create_topics(bootstrap, {topics.events: OUTPUT_PARTITIONS, topics.dlq: 1})
    return topics


async def kafka_case(
    bootstrap: str, lines: list[bytes], name: str, tmp: Path, *, passthrough_first: bool, big: bool = False
) -> dict[str, Any]:
    """The normalizer and the passthrough over the same input topic of ``lines``, one run each."""
    from tests.support import kafka_tools

    vendor = kafka_tools.unique(f"growth-{name}-in")
    await _create(bootstrap, {vendor: INPUT_PARTITIONS}, BIG_TOPIC if big else None)
    await _produce(bootstrap, vendor, _keyed(lines))
    events, size = len(lines), sum(map(len, lines))
    out: dict[str, Any] = {"events": events, "message_bytes": round(size / events)}
    for runtime in ("passthrough", "normalizer") if passthrough_first else ("normalizer", "passthrough"):
        topics = await _fresh(bootstrap, f"growth-{name}-{runtime[:4]}", vendor)
        if runtime == "normalizer":
            out["normalizer"], _ = await _run_normalizer(bootstrap, topics, tmp, events)
            out["dead_letters"] = await kafka_tools.written(bootstrap, topics.dlq, 1)
        else:
            out["passthrough"] = await _run_passthrough(bootstrap, topics, events)
    for key in ("events_per_s", "steady_events_per_s"):
        n, p = out["normalizer"][key], out["passthrough"][key]
        out[f"ratio_normalizer_vs_passthrough_{key.removesuffix('_per_s')}"] = round(n / p, 3) if n and p else None
    out["normalizer_mb_per_s"] = round(size / out["normalizer"]["seconds"] / 1e6, 1)
    return out


async def one_mib_case(bootstrap: str, lines: list[bytes], name: str, tmp: Path) -> dict[str, Any]:
    """The normalizer alone over messages with a 1 MiB value (an input topic that takes them, a unified topic
    with Kafka's default limit): what it publishes, what it dead-letters and why."""
    from binlake.shared.kafka import letters, records
    from tests.support import kafka_tools

    vendor = kafka_tools.unique(f"growth-{name}-in")
    await _create(bootstrap, {vendor: INPUT_PARTITIONS}, BIG_TOPIC)
    await _produce(bootstrap, vendor, _keyed(lines))
    topics = await _fresh(bootstrap, f"growth-{name}", vendor)
    timing, normalizer = await _run_normalizer(bootstrap, topics, tmp, len(lines))
    published = await kafka_tools.read_all(bootstrap, topics.events)
    dead = await kafka_tools.read_all(bootstrap, topics.dlq)
    first = records.header_map(dead[0].headers) if dead else {}
    aborts = normalizer.metrics.registry.get_sample_value("binlake_transaction_aborts_total", {"cause": "refused"})
    return {
        "messages": len(lines),
        "message_bytes": round(sum(map(len, lines)) / len(lines)),
        "seconds": timing["seconds"],
        "published_events": len(published),
        "published_event_bytes_max": max((len(r.value or b"") for r in published), default=None),
        "dead_letters": len(dead),
        "dead_letter_reason": first.get(records.H_REASON),
        "dead_letter_value_bytes": len(dead[0].value or b"") if dead else None,
        "dead_letter_value_truncated": first.get(letters.H_VALUE_TRUNCATED) == "true" if dead else None,
        "transaction_aborts_refused": int(aborts or 0),
    }


async def normalize_kafka(bootstrap: str, config: GrowthConfig, tmp: Path) -> dict[str, Any]:
    # A small run of each first, left out: a new broker creates its offsets and transaction topics then.
    await kafka_case(bootstrap, wide_lines(5, 500), "warm", tmp, passthrough_first=False)
    width: dict[str, Any] = {}
    for index, columns in enumerate(config.widths):
        probe = wide_lines(columns, 50)
        count = _count(sum(map(len, probe)) // len(probe), config.kafka_mb, config.max_events, minimum=500)
        lines = wide_lines(columns, count)
        width[str(columns)] = {
            "columns": columns,
            **await kafka_case(bootstrap, lines, f"w{columns}", tmp, passthrough_first=index % 2 == 1),
        }
    sizes: dict[str, Any] = {}
    for index, value_bytes in enumerate(v for v in config.value_bytes if v < MIB - 4096):
        count = _count(value_bytes + 300, config.kafka_mb, config.max_events, minimum=200)
        lines = sized_lines(value_bytes, count)
        sizes[str(value_bytes)] = {
            "value_bytes": value_bytes,
            **await kafka_case(bootstrap, lines, f"v{value_bytes}", tmp, passthrough_first=index % 2 == 1, big=True),
        }
    one_mib = {
        "incompressible": await one_mib_case(bootstrap, sized_lines(MIB, 6), "mib-random", tmp),
        "compressible": await one_mib_case(bootstrap, sized_lines(MIB, 6, compressible=True), "mib-text", tmp),
    }
    return {"width": width, "value_size": sizes, "one_mib": one_mib}


# ---------------------------------------------------------------- sink: lake size


def clone_key(key: int, copy: int, stride: int = CLONE_STRIDE) -> int:
    """The key of copy ``copy`` of generated key ``key`` (copy 0: the key itself).

    The generator's keys are small (1, 2, ...) or near 2**64 (every fifth, ``2**64 - n``): small keys move up
    by ``copy * stride``, the others down, so the copies of distinct keys never meet while every key is
    below ``stride`` or above ``2**64 - stride`` and ``copy * stride`` stays below 2**63.
    """
    return integer(key + copy * stride if key < 2**63 else key - copy * stride)


def rekeyed(change: Change, key: int) -> Change:
    """``change`` as a change of the row with key ``key``."""
    before = None if change.before is None else {**change.before, "id": key}
    after = None if change.after is None else {**change.after, "id": key}
    return dataclasses.replace(change, before=before, after=after)


def lake_changes(base: int, changes: int, seed: int = 31) -> tuple[list[Change], list[Change]]:
    """``base`` generated inserts of one table, then ``changes`` generated updates of its rows."""
    workload = Workload(seed=seed, tables=1, database=LAKE_DATABASE, insert_share=1.0, delete_share=0.0)
    inserts = list(workload.run(base))
    workload.insert_share = 0.0
    return inserts, list(workload.run(changes))


def encode_changes(changes: Iterable[Change], *, first_offset: int = 0) -> list[tuple[int, bytes, bytes]]:
    """(partition, key, value) of each change's canonical events, as the normalizer would publish them (input
    offsets from ``first_offset`` on: canal-json orders a row's changes by them)."""
    render_fn = render.get(FORMAT)
    render_ctx = render.RenderContext()
    parser = registry.get(FORMAT)
    ctx = ParseContext(topic=f"{LAKE_DATABASE}.vendor")
    partitions = list(range(OUTPUT_PARTITIONS))
    out = []
    for offset, change in enumerate(changes, start=first_offset):
        outcome = parser(render_fn(change, render_ctx), ctx.at(ctx.topic, 0, offset))
        if not isinstance(outcome, Parsed):
            raise RuntimeError(f"the {FORMAT} parser rejected a generated message: {outcome}")
        for event in outcome.events:
            key = event_key(event)
            out.append((partition_for(key, partitions, partitions), key, avro.encode(event)))
    return out


def _clone_mirror(spark: Any, uri: str, copies: int) -> dict[str, Any]:
    """Append copies 1..``copies``-1 of the mirror's rows at ``uri`` under ``clone_key``'s keys, in its schema
    (order keys kept: older than any later change), about 100,000 rows a file."""
    from pyspark.sql import functions as F

    started = time.perf_counter()
    mirror = spark.read.format("delta").load(uri)
    base = mirror.count()
    id_type = mirror.schema["id"].dataType.simpleString()
    wide = "decimal(20,0)"
    shift = F.col("_copy").cast(wide) * F.lit(CLONE_STRIDE).cast(wide)
    key = F.col("id").cast(wide)
    moved = F.when(key < F.lit(Decimal(2**63)).cast(wide), key + shift).otherwise(key - shift).cast(id_type)
    copied = mirror.crossJoin(spark.range(1, copies).withColumnRenamed("id", "_copy"))
    added = base * (copies - 1)
    frame = copied.select(*[moved.alias(name) if name == "id" else F.col(name) for name in mirror.columns])
    frame.repartition(max(2, added // 100_000)).write.format("delta").mode("append").save(uri)
    return {"rows_added": added, "seconds": round(time.perf_counter() - started, 1), "id_type": id_type}


def _detail(spark: Any, uri: str) -> dict[str, Any]:
    from delta.tables import DeltaTable

    row = DeltaTable.forPath(spark, uri).detail().first()
    assert row is not None
    return {"files": int(row["numFiles"]), "mib": round(int(row["sizeInBytes"]) / MIB, 1)}


MERGE_METRICS = (
    "executionTimeMs",
    "scanTimeMs",
    "rewriteTimeMs",
    "materializeSourceTimeMs",
    "numTargetFilesAdded",
    "numTargetFilesRemoved",
    "numTargetDeletionVectorsAdded",
    "numTargetRowsCopied",
    "numTargetRowsUpdated",
    "numTargetBytesAdded",
)
"""Delta's own operation metrics of a MERGE commit: where its time goes (scan: finding the touched files;
rewrite: writing the changed rows) and what it wrote."""


def _last_merge(spark: Any, uri: str) -> dict[str, Any] | None:
    """The newest MERGE commit of the table: its version and ``MERGE_METRICS`` (None: no MERGE yet)."""
    from delta.tables import DeltaTable

    rows = DeltaTable.forPath(spark, uri).history(20).where("operation = 'MERGE'").orderBy("version").collect()
    if not rows:
        return None
    metrics = rows[-1]["operationMetrics"] or {}
    return {"version": int(rows[-1]["version"])} | {k: int(metrics[k]) for k in MERGE_METRICS if k in metrics}


def lake_size(spark: Any, kafka: Any, bench: Any, config: GrowthConfig, tmp: Path) -> dict[str, Any]:
    """One batch of ``lake_changes`` updates into a mirror of ``lake_base`` rows, then, once the mirror is copied
    up to ``lake_rows``, one more batch of the same updates spread over the copies' keys: one lake and topic."""
    from pyspark.sql import functions as F

    from binlake.spark_sink.mirror import current_state
    from tests.bench import sink_bench
    from tests.support import kafka_tools

    copies = max(1, config.lake_rows // config.lake_base)
    if config.lake_base >= CLONE_STRIDE or copies * CLONE_STRIDE >= 2**62:
        raise ValueError("BINLAKE_BENCH_GROWTH_LAKE_BASE / _ROWS out of clone_key's range")
    started = time.perf_counter()
    inserts, updates = lake_changes(config.lake_base, config.lake_changes)
    rng = random.Random(5)
    spread = [rekeyed(c, clone_key(c.key, rng.randrange(copies))) for c in updates]
    seed_items = encode_changes(inserts)
    # canal-json orders a row's changes by input offset: each batch's offsets follow the one before.
    cases = {
        config.lake_base: (1, updates, encode_changes(updates, first_offset=len(inserts))),
        copies * config.lake_base: (copies, spread, encode_changes(spread, first_offset=len(inserts) + len(updates))),
    }
    out: dict[str, Any] = {"changes": config.lake_changes, "generation_s": round(time.perf_counter() - started, 1)}
    one_batch = dataclasses.replace(bench, max_offsets_per_trigger=2 * max(len(seed_items), config.lake_changes))
    topic = kafka_tools.unique("growth-lake")
    lake = tmp / "lake"
    settings = sink_bench._sink_settings(one_batch, lake=lake.as_uri(), topic=topic)
    uri = settings.mirror_uri(LAKE_TABLE)
    asyncio.run(_create(kafka.bootstrap_servers, {topic: OUTPUT_PARTITIONS}))
    asyncio.run(_produce(kafka.bootstrap_servers, topic, seed_items))
    out["seed_s"] = round(sink_bench.sink_copy(spark, kafka, one_batch, topic, lake).seconds, 1)

    def read(full: bool = False) -> tuple[int, float]:
        """The table's current state read as ``merge_on_read`` reads it (a count, which reads only the columns
        it needs), or, ``full``, every column of every row (a hash of each row, summed)."""
        began = time.perf_counter()
        frames = current_state.current_tables(spark, settings, [LAKE_TABLE])
        if full:
            total = 0
            for frame in frames.values():
                maps = {f.name for f in frame.schema.fields if f.dataType.typeName() == "map"}
                # hash() refuses maps (the column sequences): their sorted entries instead.
                columns = [F.array_sort(F.map_entries(frame[c])) if c in maps else frame[c] for c in frame.columns]
                row = frame.select(F.count(F.lit(1)), F.sum(F.hash(*columns))).first()
                total += int(row[0]) if row is not None else 0
            return total, time.perf_counter() - began
        return sum(frame.count() for frame in frames.values()), time.perf_counter() - began

    out["warm_up_read_s"] = round(read()[1], 1)  # the read path's first use, before either size is timed
    out["sizes"] = {}
    for rows, (copy_count, changes, items) in cases.items():
        entry: dict[str, Any] = {"keys_changed": len({c.key for c in changes})}
        if copy_count > 1:
            entry["clone"] = _clone_mirror(spark, uri, copy_count)
        entry["mirror_before"] = _detail(spark, uri)
        entry["load_average_before"] = _load()
        asyncio.run(_produce(kafka.bootstrap_servers, topic, items))
        entry |= sink_bench.merge_on_read(spark, kafka, one_batch, topic, lake, tables=[LAKE_TABLE])
        settled, settled_s = read()
        entry["current_read_settled_s"] = round(settled_s, 3)
        whole, whole_s = read(full=True)
        entry["current_read_settled_full_s"] = round(whole_s, 3)
        entry["mirror_rows"] = spark.read.format("delta").load(uri).count()
        entry["mirror_after"] = _detail(spark, uri)
        entry["merge"] = _last_merge(spark, uri)
        if entry["mirror_rows"] != rows or settled != rows or whole != rows or entry["current_rows"] != rows:
            raise RuntimeError(f"the {rows}-row mirror: {entry['mirror_rows']} rows after the batch ({settled} read)")
        out["sizes"][str(rows)] = entry
    small, big = (out["sizes"][str(rows)] for rows in cases)
    for key in (
        "changelog_s",
        "current_read_s",
        "mirrors_written_s",
        "current_read_settled_s",
        "current_read_settled_full_s",
    ):
        out[f"ratio_big_vs_small_{key}"] = round(big[key] / small[key], 2) if small[key] else None
    shutil.rmtree(lake, ignore_errors=True)
    return out


def sink_part(bootstrap: str, config: GrowthConfig, tables: dict[str, Any] | None) -> dict[str, Any]:
    """``tables``: ``sink_bench.scale``'s figures from this run's ``spark_sink`` section, else measured here."""
    from tests.bench import sink_bench

    bench = sink_bench.BenchConfig()
    kafka = kafka_settings(bootstrap)
    out: dict[str, Any] = {"load_average_before": _load()}
    with tempfile.TemporaryDirectory(prefix="growth-sink-") as name:
        tmp = Path(name)
        spark = sink_bench._session(bench)
        try:
            if tables is None:
                out["tables"] = {
                    "source": "measured here (sink_bench.scale)",
                    **sink_bench.scale(spark, kafka, bench, tmp),
                }
            else:
                out["tables"] = {"source": "this run's spark_sink.scale", **tables}
            out["lake_size"] = lake_size(spark, kafka, bench, config, tmp)
        finally:
            spark.stop()
    out["load_average_after"] = _load()
    return out


# ---------------------------------------------------------------- memory


def status_kib(text: str) -> tuple[int, int]:
    """(``VmHWM``, ``VmRSS``) in KiB from a ``/proc/<pid>/status`` text; 0 for a field it lacks."""
    found = {"VmHWM:": 0, "VmRSS:": 0}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] in found:
            found[parts[0]] = int(parts[1])
    return found["VmHWM:"], found["VmRSS:"]


def _tree(pid: int) -> list[int]:
    from tests.bench.sink_sustained import _children

    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        with contextlib.suppress(OSError, ValueError):
            todo += _children(current)
    return out


Process = tuple[int, str, int, int]
"""(pid, name, VmHWM KiB, VmRSS KiB) of one process."""


def tree_memory(pid: int) -> list[Process]:
    """``Process`` of ``pid`` and of each of its descendants still running."""
    out = []
    for current in _tree(pid):
        try:
            status = Path(f"/proc/{current}/status").read_text()
            name = Path(f"/proc/{current}/comm").read_text().strip()
        except OSError:
            continue  # ended meanwhile
        out.append((current, name, *status_kib(status)))
    return out


def memory_summary(
    samples: Sequence[tuple[str | None, Sequence[Process]]], phase: str, *, min_samples: int = 5
) -> dict[str, Any]:
    """One process tree's memory up to the end of ``phase`` (``samples``: each sample's phase and processes).

    Only processes seen in ``min_samples`` samples or more count (``left_out`` counts the others): a JVM's
    short-lived children (Hadoop's ``chmod``, a fork before its ``exec``) show their parent's resident set
    for a moment, counted twice if summed. ``peak_hwm_mib``: the sum of those processes'
    ``VmHWM`` (each its own peak since it started; an upper bound of the tree's peak) as of the phase's last
    sample; ``rss_*``: the tree's ``VmRSS`` over the phase's samples.
    """
    seen: dict[int, int] = {}
    for _, processes in samples:
        for pid, *_ in processes:
            seen[pid] = seen.get(pid, 0) + 1
    stable = {pid for pid, count in seen.items() if count >= min_samples}
    last = max((i for i, (label, _) in enumerate(samples) if label == phase), default=-1)
    peaks: dict[int, tuple[str, int]] = {}
    for _, processes in samples[: last + 1]:
        for pid, name, hwm, _ in processes:
            if pid in stable:
                peaks[pid] = (name, max(hwm, peaks.get(pid, (name, 0))[1]))
    rss = sorted(
        sum(kib for pid, _, _, kib in processes if pid in stable) for label, processes in samples if label == phase
    )
    return {
        "peak_hwm_mib": round(sum(kib for _, kib in peaks.values()) / 1024),
        "rss_max_mib": round(rss[-1] / 1024) if rss else None,
        "rss_median_mib": round(rss[len(rss) // 2] / 1024) if rss else None,
        "samples": len(rss),
        "processes": [{"name": name, "hwm_mib": round(kib / 1024)} for name, kib in peaks.values()],
        "left_out": len(seen) - len(stable),
    }


@dataclass
class MemorySampler:
    """Samples ``tree_memory`` of each named process every ``every_s`` s from a thread of its own, each sample
    labelled with the ``phase`` set then."""

    roots: dict[str, int]
    every_s: float = 1.0
    phase: str | None = None
    samples: dict[str, list[tuple[str | None, list[Process]]]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="growth-memory", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            phase = self.phase
            for role, pid in self.roots.items():
                self.samples.setdefault(role, []).append((phase, tree_memory(pid)))

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def summary(self, role: str, phase: str) -> dict[str, Any]:
        return memory_summary(self.samples.get(role, []), phase)


def _changelog_rows(lake: Path) -> int:
    """The changelog's rows (from its log's statistics), 0 before it exists, -1 when it cannot be read now."""
    from deltalake import DeltaTable

    path = lake / "changelog"
    if not (path / "_delta_log").exists():
        return 0
    try:
        return int(DeltaTable(str(path)).count())
    except Exception:  # noqa: BLE001 - e.g. a commit in progress: read again later
        return -1


async def _paced(
    bootstrap: str, topic: str, items: Sequence[tuple[bytes, bytes]], rate: int, seconds: float, *, first: int
) -> dict[str, Any]:
    """Send ``rate`` messages a second for ``seconds`` (``items`` over and over from number ``first``), in
    ticks of 10 ms."""
    from tests.bench import sink_bench

    producer = sink_bench._producer(bootstrap)
    await producer.start()
    total = int(rate * seconds)
    sent = 0
    try:
        started = time.monotonic()
        while sent < total:
            due = min(total, int((time.monotonic() - started) * rate))
            if due > sent:
                batch = [(n % INPUT_PARTITIONS, *items[n % len(items)]) for n in range(first + sent, first + due)]
                await sink_bench._send(producer, topic, batch)
                sent = due
            await asyncio.sleep(0.01)
        await producer.flush()
        elapsed = time.monotonic() - started
    finally:
        await producer.stop()
    return {"sent": sent, "seconds": round(elapsed, 1), "achieved_rate": round(sent / elapsed)}


async def _committed(bootstrap: str, group: str, topic: str) -> int:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
    await consumer.start()
    try:
        return sum([(await consumer.committed(TopicPartition(topic, p))) or 0 for p in range(INPUT_PARTITIONS)])
    finally:
        await consumer.stop()


async def _wait(
    check: Callable[[], Awaitable[bool]], alive: Callable[[], None], *, since: float, timeout_s: float
) -> float | None:
    """Seconds from ``since`` (``time.monotonic``) until ``check`` holds (polled every 0.5 s), None once
    ``timeout_s`` have passed since then; ``alive`` raises if a process ended."""
    while time.monotonic() - since < timeout_s:
        alive()
        if await check():
            return round(time.monotonic() - since, 1)
        await asyncio.sleep(0.5)
    return None


def _stop(process: subprocess.Popen[bytes], grace_s: float = 120.0) -> int:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            return process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
    return process.wait()


def _normalizer_env(bootstrap: str, topics: Any) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    return env | {
        "BINLAKE_FORMAT": FORMAT,
        "BINLAKE_INPUT_TOPICS": topics.vendor,
        "BINLAKE_OUTPUT_TOPIC": topics.events,
        "BINLAKE_DLQ_TOPIC": topics.dlq,
        "BINLAKE_GROUP_ID": topics.group,
        "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "BINLAKE_METRICS_PORT": "0",
        "BINLAKE_METRICS_HOST": "127.0.0.1",
        "BINLAKE_LOG_LEVEL": "WARNING",
    }


CATCH_UP_S: Final = 30.0
"""How long after a phase's input each process may take to read all of it (``kept_up``). The sink is
waited for twice as long (it reads what the normalizer wrote), to say when it caught up."""
WARM_UP: Final = 500


async def memory_run(
    bootstrap: str, config: GrowthConfig, traffic: list[tuple[bytes, bytes]], tmp: Path
) -> dict[str, Any]:
    """One normalizer and one sink process under each of ``config.rates`` messages/s in turn: their memory."""
    from tests.bench import sink_bench
    from tests.support.pipeline import Topics
    from tests.support.signal_probe import binlake_command
    from tests.support.sink_process import sink_env

    topics = Topics.fresh("growth-mem")
    await _create(bootstrap, {topics.vendor: INPUT_PARTITIONS, topics.events: OUTPUT_PARTITIONS, topics.dlq: 1})
    lake = tmp / "mem-lake"
    settings = sink_bench._sink_settings(sink_bench.BenchConfig(), lake=lake.as_uri(), topic=topics.events)
    logs = {role: tmp / f"mem-{role}.log" for role in ("sink", "normalizer")}
    processes: dict[str, subprocess.Popen[bytes]] = {}
    with logs["sink"].open("wb") as sink_log, logs["normalizer"].open("wb") as norm_log:
        processes["sink"] = subprocess.Popen(
            binlake_command("sink"), env=sink_env(settings, bootstrap), stdout=sink_log, stderr=subprocess.STDOUT
        )
        processes["normalizer"] = subprocess.Popen(
            binlake_command("normalizer"),
            env=_normalizer_env(bootstrap, topics),
            stdout=norm_log,
            stderr=subprocess.STDOUT,
        )
    sampler = MemorySampler({role: p.pid for role, p in processes.items()})
    sampler.start()

    def alive() -> None:
        for role, process in processes.items():
            if process.poll() is not None:
                tail = logs[role].read_text(errors="replace")[-3000:]
                raise RuntimeError(f"the {role} process ended with status {process.returncode}:\n{tail}")

    async def sunk(n: int) -> bool:
        return await asyncio.to_thread(_changelog_rows, lake) >= n

    async def normalized(n: int) -> bool:
        return await _committed(bootstrap, topics.group, topics.vendor) >= n

    out: dict[str, Any] = {}
    try:
        await _produce(bootstrap, topics.vendor, ((n % INPUT_PARTITIONS, *traffic[n]) for n in range(WARM_UP)))
        ready = await _wait(functools.partial(sunk, WARM_UP), alive, since=time.monotonic(), timeout_s=600)
        if ready is None:
            raise RuntimeError("the warm-up did not reach the changelog within 600 s")
        out["ready_after_s"] = ready
        total = WARM_UP
        phases: dict[str, Any] = {}
        for rate in config.rates:
            phase: dict[str, Any] = {"load_average_before": _load()}
            sampler.phase = str(rate)
            phase["input"] = await _paced(bootstrap, topics.vendor, traffic, rate, config.seconds, first=total)
            total += int(phase["input"]["sent"])
            stopped = time.monotonic()
            normalized_at_end = await _committed(bootstrap, topics.group, topics.vendor)
            sunk_at_end = await asyncio.to_thread(_changelog_rows, lake)
            phase["normalizer_behind_when_input_stopped"] = total - normalized_at_end
            phase["sink_behind_when_input_stopped"] = total - sunk_at_end if sunk_at_end >= 0 else None
            phase["normalizer_caught_up_after_s"] = await _wait(
                functools.partial(normalized, total), alive, since=stopped, timeout_s=CATCH_UP_S
            )
            phase["sink_caught_up_after_s"] = await _wait(
                functools.partial(sunk, total), alive, since=stopped, timeout_s=2 * CATCH_UP_S
            )
            sampler.phase = None
            phases[str(rate)] = phase
    finally:
        sampler.stop()
        statuses = {role: _stop(process) for role, process in processes.items()}
    out["exit_status"] = statuses
    out["changelog_rows_at_stop"] = _changelog_rows(lake)
    for name, phase in phases.items():
        for role in processes:
            phase[role] = sampler.summary(role, name)
            after = phase[f"{role}_caught_up_after_s"]
            phase[role]["kept_up"] = after is not None and after <= CATCH_UP_S
    out["rates"] = phases
    return out


def memory_part(bootstrap: str, config: GrowthConfig) -> dict[str, Any]:
    from binlake.shared.cli.generate import messages

    traffic = messages(FORMAT, Workload(seed=11, tables=8, database=LAKE_DATABASE), 20_000, "UTC")
    out: dict[str, Any] = {"seconds_per_rate": config.seconds, "format": FORMAT, "load_average_before": _load()}
    with tempfile.TemporaryDirectory(prefix="growth-memory-") as name:
        out |= asyncio.run(memory_run(bootstrap, config, traffic, Path(name)))
    out["load_average_after"] = _load()
    return out


# ---------------------------------------------------------------- entry points


def run(
    bootstrap: str,
    config: GrowthConfig | None = None,
    parts: Sequence[str] = PARTS,
    *,
    tables: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The growth measurements (``parts``) on the broker at ``bootstrap``; ``tables``: this run's
    ``spark_sink.scale`` figures, if it has them."""
    config = config or GrowthConfig()
    report: dict[str, Any] = {"config": dataclasses.asdict(config), "load_average_before": _load()}
    if "normalize" in parts:
        started = time.perf_counter()
        report["normalize"] = {"codec": normalize_codec(config)}
        report["normalize"]["codec"]["load_average_after"] = _load()
        with tempfile.TemporaryDirectory(prefix="growth-kafka-") as name:
            report["normalize"]["kafka"] = asyncio.run(normalize_kafka(bootstrap, config, Path(name)))
        report["normalize"]["seconds"] = round(time.perf_counter() - started)
        report["normalize"]["load_average_after"] = _load()
    if "memory" in parts:
        started = time.perf_counter()
        report["memory"] = memory_part(bootstrap, config)
        report["memory"]["part_seconds"] = round(time.perf_counter() - started)
    if "sink" in parts:
        started = time.perf_counter()
        report["sink"] = sink_part(bootstrap, config, tables)
        report["sink"]["seconds"] = round(time.perf_counter() - started)
    report["load_average_after"] = _load()
    return report


def section(tables: dict[str, Any] | None = None, parts: Sequence[str] = PARTS) -> dict[str, Any]:
    """``run`` on a broker of its own (needs java and mvn); ``tables``: this run's ``spark_sink.scale``."""
    from binlake.shared.devbroker import broker

    if not (shutil.which("java") and shutil.which("mvn")):
        return {"skipped": "the growth benchmark needs java and mvn on PATH"}
    with tempfile.TemporaryDirectory(prefix="growth-broker-") as run_dir:
        info = broker.start(Path(run_dir), timeout_s=120)
        try:
            return run(info.bootstrap, parts=parts, tables=tables)
        finally:
            with contextlib.suppress(broker.BrokerError):
                broker.stop(Path(run_dir))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.growth", description=__doc__.split("\n")[0])
    parser.add_argument("--only", choices=PARTS, action="append", help="run only this part (repeatable)")
    args = parser.parse_args(argv)
    json.dump(section(parts=args.only or PARTS), sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
