"""``binlake topics create``: make binlake's topics, replicated as the cluster allows or as asked.

Each ``TOPIC`` is a name, or ``name:partitions``; the others get ``--partitions``.
Missing topics are created with ``--replication-factor`` replicas (default: 3, or
the number of brokers where fewer) and ``--min-insync-replicas`` (default: one less
than the factor, so acks=all writes go on with one replica down and stop rather
than rest on one copy), plus every ``--config``. An existing topic is left as it is
and checked: fewer replicas or a lower ``min.insync.replicas`` than asked is
printed with the Kafka tool that fixes it, and the command exits 1 (after
creating the rest). Partitions are never added: that would move keys between
partitions, and the Kafka-order keys of the formats compare only within one.

Prints one JSON line per topic: ``topic``, ``created``, ``partitions``,
``replication_factor``, ``min_insync_replicas`` and ``shortfalls``. The Kafka
connection is the normalizer's (``BINLAKE_KAFKA_*``: TLS, SASL).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING

from binlake.shared.errors import BinlakeError

if TYPE_CHECKING:
    from binlake.shared.kafka.topics import TopicReport


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="topics_command", required=True, metavar="ACTION")
    create = sub.add_parser("create", help="create missing topics; check the replication of existing ones")
    create.add_argument("topics", nargs="+", metavar="TOPIC", help="name, or name:partitions")
    create.add_argument("--partitions", type=int, default=3, help="partitions of a TOPIC given without (default 3)")
    create.add_argument(
        "--replication-factor", type=int, metavar="N", help="replicas (default: 3, or the brokers where fewer)"
    )
    create.add_argument(
        "--min-insync-replicas", type=int, metavar="N", help="topic min.insync.replicas (default: replicas - 1)"
    )
    create.add_argument(
        "--config", action="append", default=[], metavar="KEY=VALUE", help="a topic config of the created topics"
    )
    create.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (BINLAKE_KAFKA_BOOTSTRAP_SERVERS)")


def parse_topics(specs: list[str], partitions: int) -> dict[str, int]:
    """``name`` or ``name:partitions`` -> {name: partitions}; a name given twice must agree with itself."""
    found: dict[str, int] = {}
    for spec in specs:
        name, _, count = spec.partition(":")
        if not name:
            raise BinlakeError(f"topic {spec!r} has no name")
        try:
            number = int(count) if count else partitions
        except ValueError:
            raise BinlakeError(f"topic {spec!r}: partitions must be a whole number") from None
        if number < 1:
            raise BinlakeError(f"topic {spec!r}: partitions must be at least 1")
        if found.setdefault(name, number) != number:
            raise BinlakeError(f"topic {name} given with {found[name]} and {number} partitions")
    return found


def parse_configs(pairs: list[str]) -> dict[str, str]:
    configs: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not key or not sep:
            raise BinlakeError(f"--config {pair!r}: write it KEY=VALUE, e.g. retention.ms=2592000000")
        configs[key] = value
    return configs


def run(args: argparse.Namespace) -> int:
    topics = parse_topics(args.topics, args.partitions)
    configs = parse_configs(args.config)
    if "min.insync.replicas" in configs:
        raise BinlakeError("set min.insync.replicas with --min-insync-replicas: it is checked against the replicas")
    reports = asyncio.run(_create(args, topics, configs))
    for report in reports:
        print(
            json.dumps(
                {
                    "topic": report.topic,
                    "created": report.created,
                    "partitions": report.partitions,
                    "replication_factor": report.replication_factor,
                    "min_insync_replicas": report.min_insync_replicas,
                    "shortfalls": list(report.shortfalls),
                }
            )
        )
        for shortfall in report.shortfalls:
            print(f"binlake topics: {shortfall}", file=sys.stderr)
    return 1 if any(report.shortfalls for report in reports) else 0


async def _create(args: argparse.Namespace, wanted: dict[str, int], configs: dict[str, str]) -> list[TopicReport]:
    from aiokafka.admin import AIOKafkaAdminClient
    from aiokafka.errors import KafkaError

    from binlake.shared.config.settings import kafka_settings
    from binlake.shared.kafka import access
    from binlake.shared.kafka.client import connection_kwargs
    from binlake.shared.kafka.topics import asked, broker_count, ensure

    kafka = kafka_settings(args.bootstrap_servers)
    await access.diagnose(kafka)  # refused credentials or an untrusted broker: one line saying which
    admin = AIOKafkaAdminClient(**connection_kwargs(kafka))
    try:
        await admin.start()
        plan = asked(await broker_count(admin), args.replication_factor, args.min_insync_replicas)
        return await ensure(admin, wanted, plan, configs)
    except KafkaError as exc:  # unreachable brokers, a timeout: a Job's retry or the user's re-run fixes it
        raise BinlakeError(
            f"Kafka at {kafka.bootstrap_servers} failed: {exc!r}; check BINLAKE_KAFKA_BOOTSTRAP_SERVERS and run again"
        ) from exc
    finally:
        await admin.close()
