"""``binlake generate``: synthetic MySQL traffic in any vendor format, with its ground truth.

Plays ``--events`` inserts, updates and deletes over ``--tables`` tables (every
common MySQL column type, unsigned BIGINT beyond int64, DECIMAL(38,10),
DATETIME(6), TIMESTAMP, BLOB, JSON, NULLs), renders each change as a message of
``--format`` and produces it to ``--topic`` (keyed by table and primary key, so
one row's changes stay in order in one partition), or writes it to
``--output-file`` (one message per line; base64 lines for binary formats).
``--truth FILE`` receives the final state of every table and every change in
order, plus what a normalizer needs to read the messages (``parse``).

``--ties`` plays the traffic that ties or inverts order keys built from event
times or batch ids (issue 16): several changes of one row in the same second,
multi-row statements whose last row is changed again by the next statements,
event times that go back (a transaction that started earlier commits later).
For ``canal-json`` the messages are then Canal's batches: multi-row flat
messages, every message of a batch carrying the batch's ``id``, keyed by
``database.table``. The ground truth is still the source's final state.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import sys
from pathlib import Path
from typing import Any

from binlake.shared.config.settings import KafkaSettings
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.parsing.context import zone

BINARY_FORMATS = frozenset({"oms-avro", "drs-avro"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", required=True, metavar="ID", help="vendor format to render")
    parser.add_argument("--topic", metavar="TOPIC", help="Kafka topic to produce to")
    parser.add_argument("--events", type=int, required=True, metavar="N", help="number of changes")
    parser.add_argument("--tables", type=int, default=3, metavar="K", help="number of tables (default 3)")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="random seed (default 1)")
    parser.add_argument("--database", default="shop", help="database name (default shop)")
    parser.add_argument("--truth", type=Path, metavar="FILE", help="write the ground truth JSON here")
    parser.add_argument("--output-file", type=Path, metavar="FILE", help="write messages here instead of Kafka")
    parser.add_argument("--source-timezone", default="UTC", metavar="TZ", help="zone of wall-clock renderings")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (BINLAKE_KAFKA_BOOTSTRAP_SERVERS)")
    parser.add_argument(
        "--ties",
        action="store_true",
        help="traffic that ties or inverts time-based order keys: a row changed again in the same second, "
        "multi-row messages and Canal batches sharing one id, event times that go back",
    )


def messages(format_id: str, workload: Workload, events: int, tz_name: str) -> list[tuple[bytes, bytes]]:
    """(key, message) for each generated change, in order (with ``workload.ties``, a batch
    renderer's messages where the vendor packs several changes into one)."""
    render_fn = render.get(format_id)
    ctx = render.RenderContext(zone=zone(tz_name))
    batches = render.get_batches(format_id) if workload.ties else None
    if batches is not None:
        return batches(list(workload.run(events)), ctx)
    out = []
    for change in workload.run(events):
        key = f"{change.database}.{change.table}.{change.key}".encode()
        out.append((key, render_fn(change, ctx)))
    return out


def truth_document(format_id: str, workload: Workload, tz_name: str) -> dict[str, Any]:
    document = workload.truth()
    document["format"] = format_id
    document["source_timezone"] = tz_name
    document["ties"] = workload.ties
    document["parse"] = render.parse_options(format_id)
    return document


async def produce(kafka: KafkaSettings, topic: str, items: list[tuple[bytes, bytes]]) -> None:
    from aiokafka import AIOKafkaProducer

    from binlake.shared.kafka.client import connection_kwargs

    producer = AIOKafkaProducer(enable_idempotence=True, linger_ms=5, **connection_kwargs(kafka))
    await producer.start()
    try:
        futures = [await producer.send(topic, message, key=key) for key, message in items]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


def run(args: argparse.Namespace) -> int:
    workload = Workload(seed=args.seed, tables=args.tables, database=args.database, ties=args.ties)
    items = messages(args.format, workload, args.events, args.source_timezone)
    if args.truth:
        args.truth.write_text(json.dumps(truth_document(args.format, workload, args.source_timezone)))
    if args.output_file:
        binary = args.format in BINARY_FORMATS
        lines = [base64.b64encode(m) if binary else m.replace(b"\n", b" ") for _, m in items]
        args.output_file.write_bytes(b"\n".join(lines) + b"\n")
    elif args.topic:
        kafka = (
            KafkaSettings()
            if args.bootstrap_servers is None
            else KafkaSettings(bootstrap_servers=args.bootstrap_servers)
        )
        asyncio.run(produce(kafka, args.topic, items))
    else:
        print("binlake generate: give --topic (Kafka) or --output-file", file=sys.stderr)
        return 2
    summary = {"format": args.format, "events": len(workload.changes), "messages": len(items), "tables": args.tables}
    print(json.dumps(summary), file=sys.stderr)
    return 0
