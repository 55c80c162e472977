"""Kafka -> runtime -> Kafka throughput, with transactions, on one broker in one run.

Three runtimes read the same generated vendor traffic and write the unified
topic exactly once (as each understands it):

- ``normalizer``: binlake's production runtime, ``shared.kafka.runtime.Normalizer``
  in-process with its production batch sizes (2000 messages / 200 ms per
  partition and transaction), per format in ``formats``;
- ``passthrough``: the same aiokafka client doing no work: consume, produce the
  raw bytes, one transaction per partition batch with
  ``send_offsets_to_transaction`` (same batch sizes, same producer settings:
  ``BINLAKE_COMPRESSION``'s default lz4, records sent to partitions named by
  ``partition_for`` as the normalizer does).
  It is the ceiling of this client and broker: ``normalizer / passthrough`` is
  what parsing + Avro encoding costs;
- ``faust``: the faust-streaming peer (``tests.bench.faust_peer``, a subprocess,
  ``processing_guarantee="exactly_once"``), canal-json only;
- ``quix`` and ``quix_passthrough``: the quix-streams peer (``tests.bench.quix_peer``, a
  subprocess on confluent-kafka / librdkafka, ``processing_guarantee="exactly-once"``, the same
  checkpoint bounds and client settings), running binlake's codec per message, and copying the
  bytes. Each quix run is checked: its committed output must be the normalizer codec's records
  for the input, each once, on the normalizer's partitions, with transaction markers in the
  topic (``check``); a run that fails it is no valid contender (``quix_valid`` false, no ratio).

The input (3 partitions) is generated with ``shared.generate`` and produced
once per format, before any clock starts; every run reads it with a fresh
group into a fresh unified topic (4 partitions) and dead-letter topic. The
normalizer, the passthrough and the quix pair run ``rounds`` times each, rotating which
goes first; the report gives the per-field medians, the median of the
per-round ratios, and every round (this machine's speed drifts by tens of
percent between runs, so one pair proves little). The clock stops when the group has committed every
input offset (polled every 50 ms). ``events_per_s`` counts from the runtime's
start (group join and, for faust, interpreter start-up included);
``steady_events_per_s`` counts from the group's first commit, which takes
start-up out.

``parse_encode_only`` is the normalizer's CPU work without Kafka (the format's
parser, then the kernel's typed values, Avro encoding and keys, in a loop): the
normalizer cannot beat it on one core.

``python -m tests.bench.kafka_bench`` starts its own broker and prints the JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRecord, TopicPartition

from binlake.shared.cli.generate import messages
from binlake.shared.config.settings import NormalizerSettings, kafka_settings
from binlake.shared.devbroker import broker
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kafka.letters import dead_letter
from binlake.shared.kafka.records import partition_for
from binlake.shared.kafka.runtime import Normalizer
from binlake.shared.parsing.result import Rejected
from tests.support import kafka_tools
from tests.support.pipeline import Topics, normalizer_settings

REPO = Path(__file__).resolve().parents[2]
INPUT_PARTITIONS = 3
OUTPUT_PARTITIONS = 4
BATCH_MAX_MESSAGES = 2000
"""The runtime's production default (``BINLAKE_BATCH_MAX_MESSAGES``)."""
BATCH_MAX_MS = 200
"""The runtime's production default (``BINLAKE_BATCH_MAX_MS``)."""
FAUST_FORMATS = frozenset({"canal-json"})
QUIX_MODES: Final = {"quix": "normalize", "quix_passthrough": "passthrough"}
"""The quix-streams contenders and their ``tests.bench.quix_peer --mode``."""
AUTO_MIX: Final = (
    "canal-json",
    "kafkariver-canal",
    "ckafka-v1",
    "drs-json",
    "maxwell-json",
    "ogg-json",
    "oms-default",
    "oms-extend-column-type",
    "oms-dataworks",
    "oms-shareplex",
    "oms-avro",
    "debezium-json",
)
"""``auto``'s input: these formats' traffic interleaved (the formats auto detects without options)."""
DEFAULT_FORMATS = [*sorted(render.RENDERERS), "auto"]


@dataclass
class Timing:
    events: int
    seconds: float
    first_commit_s: float
    committed_at_first: int
    transactions: int | None = None

    def report(self) -> dict[str, Any]:
        steady_s = self.seconds - self.first_commit_s
        steady_events = self.events - self.committed_at_first
        out: dict[str, Any] = {
            "events": self.events,
            "seconds": round(self.seconds, 3),
            "events_per_s": round(self.events / self.seconds) if self.seconds > 0 else None,
            "steady_events_per_s": round(steady_events / steady_s) if steady_s > 0 and steady_events > 0 else None,
        }
        if self.transactions:
            out["transactions"] = self.transactions
            out["mean_batch"] = round(self.events / self.transactions, 1)
        return out


class _Progress:
    """Polls the group's committed offsets of the input topic."""

    def __init__(self, bootstrap: str, group: str, topic: str) -> None:
        self.consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        self.tps = [TopicPartition(topic, p) for p in range(INPUT_PARTITIONS)]

    async def committed(self) -> int:
        total = 0
        for tp in self.tps:
            offset = await self.consumer.committed(tp)
            total += offset or 0
        return total

    async def time(self, events: int, started: float, *, timeout_s: float = 600.0) -> Timing:
        """Wait until ``events`` input offsets are committed; time from ``started`` (perf_counter)."""
        await self.consumer.start()
        try:
            first: tuple[float, int] | None = None
            while True:
                done = await self.committed()
                now = time.perf_counter()
                if done and first is None:
                    first = (now - started, done)
                if done >= events:
                    assert first is not None
                    return Timing(events, now - started, first[0], first[1])
                if now - started > timeout_s:
                    raise TimeoutError(f"only {done} of {events} input offsets committed after {timeout_s}s")
                await asyncio.sleep(0.05)
        finally:
            await self.consumer.stop()


@functools.cache
def _traffic(format_id: str, events: int) -> list[tuple[bytes, bytes]]:
    """The generated input, made once per format for every runtime (the same bytes for each)."""
    if format_id == "auto":
        share = -(-events // len(AUTO_MIX))
        streams = [_traffic(mixed, share) for mixed in AUTO_MIX]
        return [item for row in zip(*streams, strict=True) for item in row][:events]
    return messages(format_id, Workload(seed=11, tables=3), events, "UTC")


_INPUTS: dict[tuple[str, str, int], str] = {}
_POSITIONS: dict[str, list[tuple[int, int]]] = {}
"""Each input topic's messages' (partition, offset), in ``_traffic`` order."""


async def _prepare(bootstrap: str, format_id: str, events: int, name: str) -> Topics:
    """Fresh output topics and group; the input topic is produced once per format and read by every run."""
    fresh = Topics.fresh(name)
    vendor = _INPUTS.get((bootstrap, format_id, events))
    if vendor is None:
        vendor = fresh.vendor
        await kafka_tools.create_topics(bootstrap, {vendor: INPUT_PARTITIONS})
        _POSITIONS[vendor] = await kafka_tools.produce(bootstrap, vendor, _traffic(format_id, events))
        _INPUTS[(bootstrap, format_id, events)] = vendor
    topics = Topics(vendor, fresh.events, fresh.dlq, fresh.group)
    await kafka_tools.create_topics(bootstrap, {topics.events: OUTPUT_PARTITIONS, topics.dlq: 1})
    return topics


async def _timed(bootstrap: str, topics: Topics, events: int, start: Callable[[], Awaitable[None]]) -> Timing:
    progress = _Progress(bootstrap, topics.group, topics.vendor)
    started = time.perf_counter()
    await start()
    return await progress.time(events, started)


# ---------------------------------------------------------------- runtimes


async def bench_normalizer(bootstrap: str, format_id: str, events: int, tmp: Path) -> Timing:
    topics = await _prepare(bootstrap, format_id, events, f"bench-norm-{format_id}")
    settings = normalizer_settings(format_id, topics, tmp, "UTC").model_copy(
        update={"batch_max_messages": BATCH_MAX_MESSAGES, "batch_max_ms": BATCH_MAX_MS}
    )
    normalizer = Normalizer(settings, kafka_settings(bootstrap))
    task: asyncio.Task[None] | None = None

    async def start() -> None:
        nonlocal task
        task = asyncio.create_task(normalizer.run())

    try:
        timing = await _timed(bootstrap, topics, events, start)
    finally:
        normalizer.stop()
        if task is not None:
            await asyncio.wait_for(task, 60)
    committed = normalizer.metrics.registry.get_sample_value("binlake_transactions_committed_total")
    timing.transactions = int(committed) if committed is not None else None
    return timing


def bench_parse_encode(format_id: str, events: int, tmp: Path) -> dict[str, Any]:
    """The CPU floor of the normalizer's work without Kafka: its codec (the format's parser, the kernel's
    typed values, Avro encoding and record keys)."""
    topics = Topics("in", "out", "dlq", "group")
    settings = normalizer_settings(format_id, topics, tmp, "UTC")
    codec = Normalizer(settings, kafka_settings("127.0.0.1:1")).codec
    items = _traffic(format_id, events)
    started = time.perf_counter()
    produced = 0
    for offset, (_, raw) in enumerate(items):
        outcome = codec(raw, topics.vendor, 0, offset)
        if not isinstance(outcome, Rejected):
            produced += outcome.records
    seconds = time.perf_counter() - started
    report: dict[str, Any] = {"events": events, "encoded": produced, "events_per_s": round(events / seconds)}
    return report


class Passthrough:
    """The aiokafka floor: the runtime's transaction protocol with no parsing or encoding."""

    def __init__(self, bootstrap: str, topics: Topics) -> None:
        self.bootstrap = bootstrap
        self.topics = topics
        self.producers: dict[TopicPartition, AIOKafkaProducer] = {}
        self.stopping = asyncio.Event()
        self.transactions = 0
        default = NormalizerSettings.model_fields["compression"].default
        self.compression = None if default == "none" else default

    async def _producer(self, tp: TopicPartition) -> AIOKafkaProducer:
        producer = self.producers.get(tp)
        if producer is None:
            producer = AIOKafkaProducer(
                bootstrap_servers=self.bootstrap,
                transactional_id=f"{self.topics.group}.{tp.topic}.{tp.partition}",
                enable_idempotence=True,
                partitioner=partition_for,  # the normalizer's partitioner: same client settings
                linger_ms=5,
                max_batch_size=256 * 1024,
                max_request_size=16 * 1024 * 1024,
                compression_type=self.compression,  # and the normalizer's default compression
            )
            await producer.start()
            self.producers[tp] = producer
        return producer

    async def _batch(self, tp: TopicPartition, records: list[ConsumerRecord[bytes, bytes]]) -> None:
        producer = await self._producer(tp)
        await producer.begin_transaction()
        # Partitions named as the normalizer names its records' (partition_for over the producer's own list).
        known = producer.client.cluster.partitions_for_topic(self.topics.events)
        partitions = list(known) if known else None
        sends = [
            await producer.send(
                self.topics.events,
                record.value or b"",
                key=record.key,
                partition=None if partitions is None else partition_for(record.key, partitions, partitions),
            )
            for record in records
        ]
        await asyncio.gather(*sends)
        await producer.send_offsets_to_transaction({tp: records[-1].offset + 1}, self.topics.group)
        await producer.commit_transaction()
        self.transactions += 1

    async def run(self) -> None:
        consumer = AIOKafkaConsumer(
            self.topics.vendor,
            bootstrap_servers=self.bootstrap,
            group_id=self.topics.group,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            max_partition_fetch_bytes=4 * 1024 * 1024,
        )
        await consumer.start()
        try:
            while not self.stopping.is_set():
                batches = await consumer.getmany(timeout_ms=BATCH_MAX_MS, max_records=BATCH_MAX_MESSAGES)
                await asyncio.gather(*(self._batch(tp, records) for tp, records in batches.items() if records))
        finally:
            for producer in self.producers.values():
                await producer.stop()
            await consumer.stop()


async def bench_passthrough(bootstrap: str, format_id: str, events: int) -> Timing:
    topics = await _prepare(bootstrap, format_id, events, f"bench-pass-{format_id}")
    passthrough = Passthrough(bootstrap, topics)
    task: asyncio.Task[None] | None = None

    async def start() -> None:
        nonlocal task
        task = asyncio.create_task(passthrough.run())

    try:
        timing = await _timed(bootstrap, topics, events, start)
    finally:
        passthrough.stopping.set()
        if task is not None:
            await asyncio.wait_for(task, 60)
    timing.transactions = passthrough.transactions
    return timing


def spawn_faust(bootstrap: str, format_id: str, topics: Topics, log: Path) -> subprocess.Popen[bytes]:
    """The faust peer as a subprocess (its log appended to ``log``)."""
    command = [sys.executable, "-m", "tests.bench.faust_peer", "--format", format_id]
    command += ["--input-topic", topics.vendor, "--output-topic", topics.events, "--dlq-topic", topics.dlq]
    command += ["--group-id", topics.group, "--bootstrap", bootstrap]
    with open(log, "ab") as out:
        return subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


async def bench_faust(bootstrap: str, format_id: str, events: int, tmp: Path) -> Timing:
    topics = await _prepare(bootstrap, format_id, events, f"bench-faust-{format_id}")
    log = tmp / f"faust-{format_id}.log"
    process: subprocess.Popen[bytes] | None = None

    async def start() -> None:
        nonlocal process
        process = spawn_faust(bootstrap, format_id, topics, log)

    try:
        return await _timed(bootstrap, topics, events, start)
    finally:
        if process is not None:
            process.terminate()
            try:
                await asyncio.to_thread(process.wait, 60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _quix_available() -> bool:
    return importlib.util.find_spec("quixstreams") is not None


def spawn_quix(bootstrap: str, mode: str, format_id: str, topics: Topics, log: Path) -> subprocess.Popen[bytes]:
    """The quix-streams peer as a subprocess (its log appended to ``log``), with the runtime's batch bounds as
    its checkpoint bounds."""
    command = [sys.executable, "-m", "tests.bench.quix_peer", "--mode", mode, "--format", format_id]
    command += ["--input-topic", topics.vendor, "--output-topic", topics.events, "--dlq-topic", topics.dlq]
    command += ["--group-id", topics.group, "--bootstrap", bootstrap]
    command += ["--commit-interval", str(BATCH_MAX_MS / 1000), "--commit-every", str(BATCH_MAX_MESSAGES)]
    with open(log, "ab") as out:
        return subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


Output = Counter[tuple[str, bytes | None, bytes]]
"""Records as ("events" or "dlq", key, value), each with how many times it is there."""


def _expected(format_id: str, events: int, vendor: str, mode: str, tmp: Path) -> Output:
    """What the quix peer must write for the input topic ``vendor``: the normalizer codec's records and dead
    letters of each message at its coordinates (``normalize``), or each message's bytes (``passthrough``)."""
    items = _traffic(format_id, events)
    if mode == "passthrough":
        return Counter(("events", key, value) for key, value in items)
    settings = normalizer_settings(format_id, Topics(vendor, "out", "dlq", "group"), tmp, "UTC")
    codec = Normalizer(settings, kafka_settings("127.0.0.1:1")).codec
    out: Output = Counter()
    for (key, raw), (partition, offset) in zip(items, _POSITIONS[vendor], strict=True):
        outcome = codec(raw, vendor, partition, offset)
        if isinstance(outcome, Rejected):
            letter = dead_letter(key, raw, [], max_value_bytes=settings.dlq_max_value_bytes)
            out["dlq", letter.key, letter.value] += 1
        else:
            out.update(("events", k, v) for k, v in outcome.pairs())
    return out


async def _check_quix(bootstrap: str, topics: Topics, expected: Output, log: Path) -> dict[str, Any]:
    """The committed output against ``expected`` (read_committed), and what makes the run exactly once."""
    records = await kafka_tools.read_all(bootstrap, topics.events)
    letters = await kafka_tools.read_all(bootstrap, topics.dlq)
    got: Output = Counter(("events", r.key, r.value or b"") for r in records)
    got.update(("dlq", r.key, r.value or b"") for r in letters)
    partitions = list(range(OUTPUT_PARTITIONS))
    peer: dict[str, Any] = {}
    for line in log.read_text("utf-8", errors="replace").splitlines():
        if line.startswith('{"quix_peer"'):
            peer = json.loads(line)["quix_peer"]
    markers = await kafka_tools.written(bootstrap, topics.events, OUTPUT_PARTITIONS) - len(records)
    exactly_once = (
        peer.get("processing_guarantee") == "exactly-once"
        and peer.get("transactional_id") is True
        and peer.get("isolation_level") == "read_committed"
        and markers > 0
    )
    check: dict[str, Any] = {
        "records": len(records),
        "dead_letters": len(letters),
        "expected": sum(expected.values()),
        "lost": sum((expected - got).values()),
        "duplicated_or_unexpected": sum((got - expected).values()),
        # Every record on the partition the normalizer gives its key (CRC-32, partition_for).
        "misplaced": sum(
            r.key is not None and r.partition != partition_for(r.key, partitions, partitions) for r in records
        ),
        # Offsets of the unified topic a read_committed reader skips: commit markers (and aborted records).
        "transaction_markers": markers,
        "exactly_once": exactly_once,
    }
    check["valid"] = exactly_once and check["lost"] == 0 and check["duplicated_or_unexpected"] == 0
    check["peer"] = peer
    return check


async def _exited(process: subprocess.Popen[bytes], log: Path) -> None:
    while process.poll() is None:
        await asyncio.sleep(0.2)
    raise RuntimeError(f"the quix peer exited ({process.returncode}) before it caught up; its log: {log}")


async def bench_quix(
    bootstrap: str, format_id: str, events: int, tmp: Path, contender: str, *, expected: dict[str, Output]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One quix run (``contender`` in ``QUIX_MODES``): its timing report and its output's check."""
    mode = QUIX_MODES[contender]
    topics = await _prepare(bootstrap, format_id, events, f"bench-{contender.replace('_', '-')}-{format_id}")
    if mode not in expected:
        expected[mode] = _expected(format_id, events, topics.vendor, mode, tmp)
    log = tmp / f"{topics.group}.log"
    progress = _Progress(bootstrap, topics.group, topics.vendor)
    started = time.perf_counter()
    process = spawn_quix(bootstrap, mode, format_id, topics, log)
    try:
        exited = asyncio.create_task(_exited(process, log))
        timed = asyncio.create_task(progress.time(events, started))
        await asyncio.wait({exited, timed}, return_when=asyncio.FIRST_COMPLETED)
        exited.cancel()
        if not timed.done():
            timed.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await timed
            await exited  # raises: the peer died
        timing = timed.result()
    finally:
        process.terminate()  # quix commits its last checkpoint and leaves the group
        try:
            await asyncio.to_thread(process.wait, 60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return timing.report(), await _check_quix(bootstrap, topics, expected[mode], log)


# ---------------------------------------------------------------- entry points


async def _run(bootstrap: str, formats: list[str], events: int, rounds: int) -> dict[str, Any]:
    report: dict[str, Any] = {
        "events": events,
        "rounds": rounds,
        "input_partitions": INPUT_PARTITIONS,
        "batch_max_messages": BATCH_MAX_MESSAGES,
        "batch_max_ms": BATCH_MAX_MS,
        "formats": {},
    }
    with tempfile.TemporaryDirectory(prefix="kafka-bench-") as name:
        tmp = Path(name)
        quix = _quix_available()
        contenders = ["normalizer", "passthrough", *(QUIX_MODES if quix else ())]
        for format_id in formats:
            runs: dict[str, list[dict[str, Any]]] = {contender: [] for contender in contenders}
            checks: dict[str, list[dict[str, Any]]] = {contender: [] for contender in QUIX_MODES}
            expected: dict[str, Output] = {}
            for round_index in range(rounds):
                # Rotate who goes first, so a drift in machine load favours none.
                shift = round_index % len(contenders)
                for runtime in contenders[shift:] + contenders[:shift]:
                    if runtime == "normalizer":
                        runs[runtime].append((await bench_normalizer(bootstrap, format_id, events, tmp)).report())
                    elif runtime == "passthrough":
                        runs[runtime].append((await bench_passthrough(bootstrap, format_id, events)).report())
                    else:
                        timing, check = await bench_quix(bootstrap, format_id, events, tmp, runtime, expected=expected)
                        runs[runtime].append(timing)
                        checks[runtime].append(check)
            del expected
            normalizers, passthroughs = runs["normalizer"], runs["passthrough"]
            ratios = [_ratio(n, p) for n, p in zip(normalizers, passthroughs, strict=True)]
            entry: dict[str, Any] = {
                "normalizer": _median(normalizers),
                "passthrough": _median(passthroughs),
                "ratio_normalizer_vs_passthrough": _median(ratios),
                "rounds": {"normalizer": normalizers, "passthrough": passthroughs, "ratios": ratios},
            }
            if quix:
                entry.update(_quix_entry(runs, checks))
                entry["rounds"].update({contender: runs[contender] for contender in QUIX_MODES})
                entry["rounds"]["quix_checks"] = checks
            else:
                entry["quix"] = {"skipped": "quixstreams is not installed (pyproject.toml's dev extras)"}
            entry["parse_encode_only"] = bench_parse_encode(format_id, events, tmp)
            if format_id in FAUST_FORMATS:
                faust = (await bench_faust(bootstrap, format_id, events, tmp)).report()
                entry["faust"] = faust
                entry["ratio_normalizer_vs_faust"] = _ratio(entry["normalizer"], faust)
            report["formats"][format_id] = entry
    return report


def _quix_entry(runs: dict[str, list[dict[str, Any]]], checks: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The quix figures of a format: medians, and the paired ratios that say client vs parse, if every run
    passed its check."""
    valid = all(check["valid"] for contender in QUIX_MODES for check in checks[contender])
    entry: dict[str, Any] = {contender: _median(runs[contender]) for contender in QUIX_MODES}
    entry["quix_valid"] = valid
    entry["quix_peer"] = checks["quix"][0]["peer"] if checks["quix"] else None
    pairs = {
        "ratio_normalizer_vs_quix": ("normalizer", "quix"),  # the goal: at or above 1
        "ratio_passthrough_vs_quix_passthrough": ("passthrough", "quix_passthrough"),  # client vs client
        "ratio_quix_vs_quix_passthrough": ("quix", "quix_passthrough"),  # what parse + encode cost quix
    }
    for name, (a, b) in pairs.items():
        ratios = [_ratio(x, y) for x, y in zip(runs[a], runs[b], strict=True)]
        entry[name] = _median(ratios) if valid else None
    return entry


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The per-field median over rounds (None values left out)."""
    out: dict[str, Any] = {}
    for field in runs[0]:
        values = [run[field] for run in runs if run.get(field) is not None]
        out[field] = statistics.median(values) if values else None
    return out


def _ratio(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for field in ("events_per_s", "steady_events_per_s"):
        x, y = a.get(field), b.get(field)
        out[field] = round(x / y, 3) if x and y else None
    return out


def run(bootstrap: str, formats: list[str], events: int, rounds: int = 3) -> dict[str, Any]:
    """Measure every runtime on the broker at ``bootstrap``; events/s and ratios as a JSON-able dict."""
    return asyncio.run(_run(bootstrap, formats, events, rounds))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.kafka_bench", description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=50000, metavar="N", help="input messages per run")
    parser.add_argument("--formats", default=",".join(DEFAULT_FORMATS), metavar="IDS", help="comma list")
    parser.add_argument("--rounds", type=int, default=3, metavar="R", help="normalizer/passthrough pairs per format")
    args = parser.parse_args(argv)
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    with tempfile.TemporaryDirectory(prefix="kafka-bench-broker-") as run_dir:
        info = broker.start(Path(run_dir), timeout_s=120)
        try:
            report = run(info.bootstrap, formats, args.events, args.rounds)
        finally:
            with contextlib.suppress(broker.BrokerError):
                broker.stop(Path(run_dir))
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
