"""``binlake dlq replay``: send dead letters back to the topic they came from, after a fix.

Reads the dead-letter topic (``read_committed``) from the replay group's
committed position, keeps the letters that match the filters (``--reason`` is a
reject code such as ``bad_value``; ``--source-topic``, ``--format``), and
produces each one's original key and bytes to its original topic, with the
header ``binlake.replayed.from`` = ``dlq-topic:partition:offset``. Produce and
offset commit share one transaction per batch, so a crashed replay neither
loses nor repeats a letter. Letters that do not match are skipped (their
offsets are committed too; use a new ``--group-id`` to scan again). With
``--dry-run`` nothing is produced or committed: matching letters are listed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

from shared.config.settings import KafkaSettings, kafka_settings
from shared.kafka import records


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="dlq_command", required=True, metavar="ACTION")
    replay = sub.add_parser("replay", help="re-feed dead letters to their source topics")
    replay.add_argument("--dlq-topic", default="binlake.dlq", help="the dead-letter topic (default binlake.dlq)")
    replay.add_argument("--group-id", default="binlake-dlq-replay", help="replay group: remembers what was replayed")
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


async def replay(args: argparse.Namespace, kafka: KafkaSettings) -> dict[str, int]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    from shared.kafka.client import connection_kwargs

    client = connection_kwargs(kafka)
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
        producer = AIOKafkaProducer(transactional_id=f"{args.group_id}.replay", enable_idempotence=True, **client)
        await producer.start()
    await consumer.start()
    counts = {"seen": 0, "replayed": 0, "skipped": 0}
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
                    counts["replayed"] += 1
                    if producer is None:
                        print(json.dumps({"offset": letter.offset, **headers}))
                        continue
                    origin = f"{tp.topic}:{tp.partition}:{letter.offset}".encode()
                    await producer.send(
                        target, letter.value, key=letter.key, headers=[(records.H_REPLAYED_FROM, origin)]
                    )
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
