"""``binlake dlq replay``: send dead letters back to the topic they came from, after a fix.

Reads the dead-letter topic (``read_committed``) from the replay group's
committed position, keeps the letters that match the filters (``--reason`` is a
reject code such as ``bad_value``; ``--source-topic``, ``--format``), and
produces each one's original key and bytes to its original topic, with the
headers ``binlake.replayed.from`` = ``dlq-topic:partition:offset`` and
``binlake.replayed.origin`` = the letter's original ``topic:partition:offset``.
The normalizer reads a replayed message as if at its original coordinates, so
its events keep the origin, and (for formats ordered by Kafka position) the
``order_key``, they would have had: a replayed old change never sorts after
newer changes of its row (docs/canonical-event.md, "order_key").

Each replayed letter is also recorded in the replay ledger, a compacted topic
(``<dlq-topic>.replayed``) keyed by ``dlq-topic:partition:offset``, in the same
transaction as its produce and the group's offset commit. A letter the ledger
holds is never replayed again, whatever the group: a re-run under a new
``--group-id`` (to scan letters an earlier filter skipped) replays only what
was not replayed before, and a crashed replay neither loses nor repeats a
letter. With ``--dry-run`` nothing is produced or committed: matching letters
are listed, with ``already_replayed`` for those in the ledger. A letter whose
value was cut to fit the dead-letter topic (``binlake.value.truncated``) is
never replayed (counted as ``truncated``): its original is found in the source
topic by the ``binlake.value.length`` and ``binlake.value.sha256`` headers.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from binlake.shared.config.settings import KafkaSettings, kafka_settings
from binlake.shared.errors import BinlakeError
from binlake.shared.kafka import records
from binlake.shared.kafka.letters import H_VALUE_TRUNCATED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dlq_command", required=True, metavar="ACTION")
    replay = sub.add_parser("replay", help="re-feed dead letters to their source topics")
    replay.add_argument("--dlq-topic", default="binlake.dlq", help="the dead-letter topic (default binlake.dlq)")
    replay.add_argument("--group-id", default="binlake-dlq-replay", help="replay group: remembers what was scanned")
    replay.add_argument(
        "--ledger-topic",
        metavar="T",
        help="compacted topic of replayed letters, created if missing (default <dlq-topic>.replayed)",
    )
    replay.add_argument("--reason", action="append", default=[], metavar="CODE", help="only these reject codes")
    replay.add_argument("--source-topic", action="append", default=[], metavar="T", help="only from these topics")
    replay.add_argument("--format", action="append", default=[], metavar="ID", help="only of these formats")
    replay.add_argument("--max", type=int, default=0, metavar="N", help="stop after N replayed letters (0: all)")
    replay.add_argument("--idle-ms", type=int, default=3000, help="stop after this long without new letters")
    replay.add_argument("--dry-run", action="store_true", help="list matching letters, change nothing")
    replay.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (BINLAKE_KAFKA_BOOTSTRAP_SERVERS)")


def _matches(headers: dict[str, str], args: argparse.Namespace) -> bool:
    return (
        (not args.reason or headers.get(records.H_ERROR_CLASS) in args.reason)
        and (not args.source_topic or headers.get(records.H_TOPIC) in args.source_topic)
        and (not args.format or headers.get(records.H_FORMAT) in args.format)
    )


LEDGER_SUFFIX = ".replayed"


def letter_id(topic: str, partition: int, offset: int) -> str:
    """A dead letter's identity in the ledger: ``dlq-topic:partition:offset``."""
    return f"{topic}:{partition}:{offset}"


def _replayed_origin(headers: dict[str, str]) -> bytes | None:
    """The letter's original ``topic:partition:offset`` (None when a header is missing)."""
    parts = [headers.get(records.H_TOPIC), headers.get(records.H_PARTITION), headers.get(records.H_OFFSET)]
    if any(part is None for part in parts):
        return None
    return ":".join(part for part in parts if part is not None).encode()


async def _ledger_partitions(client: dict[str, Any], topic: str, *, create: bool) -> list[int]:
    """The ledger's partitions ([] when it does not exist); with ``create``, make it first if missing."""
    from aiokafka.admin import AIOKafkaAdminClient

    from binlake.shared.kafka.topics import asked, broker_count, ensure

    admin = AIOKafkaAdminClient(**client)
    await admin.start()
    try:
        if create:
            # Compacted: it keeps one record per replayed letter. Replicated like a production topic (RF 3 and
            # min ISR 2 on a cluster of three or more); one another replay created meanwhile is taken as it is.
            await ensure(admin, {topic: 1}, asked(await broker_count(admin)), {"cleanup.policy": "compact"})
        for _ in range(40):  # a topic created a moment ago may have no partition metadata yet
            described = await admin.describe_topics([topic])
            partitions = [int(p["partition"]) for d in described if d["error_code"] == 0 for p in d["partitions"]]
            if partitions or not create:
                return sorted(partitions)
            await asyncio.sleep(0.25)
        raise BinlakeError(f"the replay ledger {topic} has no partitions the broker names yet; try again")
    finally:
        await admin.close()


async def _ledger(client: dict[str, Any], topic: str, *, create: bool) -> set[str]:
    """Every letter id the ledger holds (committed records only), read to its end."""
    from aiokafka import AIOKafkaConsumer, TopicPartition

    numbers = await _ledger_partitions(client, topic, create=create)
    if not numbers:
        return set()
    consumer = AIOKafkaConsumer(isolation_level="read_committed", enable_auto_commit=False, **client)
    await consumer.start()
    try:
        partitions = [TopicPartition(topic, p) for p in numbers]
        consumer.assign(partitions)
        await consumer.seek_to_beginning(*partitions)
        ends = await consumer.end_offsets(partitions)  # read_committed: the last stable offsets
        seen: set[str] = set()
        while [tp for tp, end in ends.items() if await consumer.position(tp) < end]:
            batches = await consumer.getmany(timeout_ms=1000)
            for letters in batches.values():
                seen.update(letter.key.decode() for letter in letters if letter.key is not None)
        return seen
    finally:
        await consumer.stop()


async def replay(args: argparse.Namespace, kafka: KafkaSettings) -> dict[str, int]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    from binlake.shared.kafka import access
    from binlake.shared.kafka.client import connection_kwargs

    # Credentials the brokers refuse or an untrusted broker: one line with what to fix, not aiokafka's
    # "Unable to bootstrap" traceback.
    await access.diagnose(kafka)
    client = connection_kwargs(kafka)
    ledger_topic = getattr(args, "ledger_topic", None) or f"{args.dlq_topic}{LEDGER_SUFFIX}"
    done = await _ledger(client, ledger_topic, create=not args.dry_run)
    consumer = AIOKafkaConsumer(
        args.dlq_topic,
        group_id=args.group_id,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        **client,
    )
    producer = None
    if not args.dry_run:
        # One id per ledger, not per group: a second replay of the same dead-letter topic fences the first,
        # so two replays never record the same letter side by side.
        producer = AIOKafkaProducer(transactional_id=f"binlake-dlq-replay:{ledger_topic}", **client)
        await producer.start()
    await consumer.start()
    counts = {"seen": 0, "replayed": 0, "already_replayed": 0, "truncated": 0, "skipped": 0}
    try:
        while not args.max or counts["replayed"] < args.max:
            batches = await consumer.getmany(timeout_ms=args.idle_ms)
            if not batches:
                break
            if producer is not None:
                await producer.begin_transaction()
            offsets: dict[TopicPartition, int] = {}
            for tp, letters in batches.items():
                for letter in letters:
                    if args.max and counts["replayed"] >= args.max:
                        break
                    counts["seen"] += 1
                    offsets[tp] = letter.offset + 1
                    headers = records.header_map(letter.headers)
                    target = headers.get(records.H_TOPIC)
                    if target is None or not _matches(headers, args):
                        counts["skipped"] += 1
                        continue
                    ident = letter_id(tp.topic, tp.partition, letter.offset)
                    if headers.get(H_VALUE_TRUNCATED) == "true":
                        # A cut (or bare) letter no longer holds the message: replaying it would feed a wrong
                        # message. Its length and sha256 headers identify the original in the source topic.
                        counts["truncated"] += 1
                        continue
                    if ident in done:
                        counts["already_replayed"] += 1
                        continue
                    counts["replayed"] += 1
                    if producer is None:
                        print(json.dumps({"offset": letter.offset, **headers}))
                        continue
                    marks = [(records.H_REPLAYED_FROM, ident.encode())]
                    origin = _replayed_origin(headers)
                    if origin is not None:
                        marks.append((records.H_REPLAYED_ORIGIN, origin))
                    await producer.send(target, letter.value, key=letter.key, headers=marks)
                    await producer.send(ledger_topic, json.dumps({"to": target}).encode(), key=ident.encode())
                    done.add(ident)
            if producer is not None:
                await producer.send_offsets_to_transaction(offsets, args.group_id)
                await producer.commit_transaction()
    finally:
        await consumer.stop()
        if producer is not None:
            await producer.stop()
    return counts


def run(args: argparse.Namespace) -> int:
    kafka = kafka_settings(args.bootstrap_servers)
    counts = asyncio.run(replay(args, kafka))
    print(json.dumps(counts), file=sys.stderr)
    return 0
