"""The faust peer: one agent per vendor format, ``processing_guarantee="exactly_once"``.

The agent consumes one vendor topic, parses each message with
``shared.parsing.registry``, encodes events with ``shared.codec.avro``, sends
them to the unified topic keyed by ``shared.kafka.records.event_key`` and
dead-letters rejects with binlake's ``binlake.*`` headers. Idiomatic faust:
``Topic.send`` from inside the agent, offsets committed by faust's commit timer
(``broker_commit_interval``) through its ``TransactionManager``; tables, if any,
would be in memory (``store="memory://"``), the web server is off.

How faust's exactly-once works (faust 0.15.3, read from its source): a
transactional producer per assigned *input* partition, ``transactional.id =
<app id>-<topic group>-<partition>``; the commit timer sends each input
partition's offsets to that producer's transaction and commits it. But
``TransactionManager.send`` picks the producer by the *output* record's
partition (``key_partition(output_topic, key)``), and falls back to the
non-transactional producer when the consumer has no metadata for the output
topic. Records and the offsets they derive from therefore are not in the same
transaction unless input and output are co-partitioned; the kill test in
tests/bench/test_faust_peer.py measures what that does.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import faust

from binlake.shared.codec import avro
from binlake.shared.kafka.records import dead_letter_headers, event_key
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.errors import INTERNAL
from binlake.shared.parsing.result import Parsed, Rejected

BOOTSTRAP_ENV = "BINLAKE_KAFKA_BOOTSTRAP_SERVERS"


@dataclass(frozen=True, slots=True)
class PeerConfig:
    format: str
    input_topic: str
    output_topic: str
    dlq_topic: str
    group_id: str
    bootstrap: str
    source_timezone: str = "UTC"
    session_timeout_s: float = 6.0
    commit_interval_s: float = 0.2
    """faust's default is 2.8 s; binlake's runtime commits every batch (<= 200 ms)."""
    commit_every: int = 2000
    """faust commits early after this many acked messages (binlake: 2000 per batch)."""
    datadir: str | None = None
    """faust's data folder; default: ``<temp>/binlake-faust/<group>`` (faust's own default is a
    ``<group>-data`` folder in the working directory, which benchmarks would leave in the repository)."""


def build_app(config: PeerConfig) -> faust.App:
    """A faust App with one agent: vendor topic -> parser -> unified topic / dead-letter topic."""
    parser = registry.get(config.format)
    datadir = Path(config.datadir or Path(tempfile.gettempdir()) / "binlake-faust" / config.group_id)
    # faust creates only the last level of its data folder (mkdir without parents).
    datadir.parent.mkdir(parents=True, exist_ok=True)
    base_ctx = ParseContext(topic=config.input_topic, source_timezone=zone(config.source_timezone))
    app = faust.App(
        config.group_id,
        broker=f"kafka://{config.bootstrap}",
        processing_guarantee="exactly_once",
        store="memory://",
        datadir=str(datadir),
        web_enabled=False,
        topic_replication_factor=1,
        topic_allow_declare=False,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=config.session_timeout_s,
        broker_heartbeat_interval=max(0.5, config.session_timeout_s / 4),
        broker_commit_interval=config.commit_interval_s,
        broker_commit_every=config.commit_every,
        # binlake's producer and consumer settings (shared.kafka.runtime): faust's
        # defaults (linger 0, 16 KiB batches) send one produce request per event.
        producer_linger=0.005,
        producer_max_batch_size=256 * 1024,
        producer_max_request_size=16 * 1024 * 1024,
        producer_compression_type="lz4",  # BINLAKE_COMPRESSION's default
        consumer_max_fetch_size=4 * 1024 * 1024,
        key_serializer="raw",
        value_serializer="raw",
    )
    source = app.topic(config.input_topic, key_serializer="raw", value_serializer="raw")
    sink = app.topic(config.output_topic, key_serializer="raw", value_serializer="raw")
    dlq = app.topic(config.dlq_topic, key_serializer="raw", value_serializer="raw")

    async def normalize(stream: faust.StreamT) -> None:
        async for event in stream.events():
            message = event.message
            raw = message.value or b""
            outcome = parser(raw, base_ctx.at(message.topic, message.partition, message.offset))
            if isinstance(outcome, Parsed):
                try:
                    encoded = [(event_key(item), avro.encode(item)) for item in outcome.events]
                except (TypeError, ValueError, OverflowError) as exc:
                    # The type only, as the normalizer says it: the message may quote a value.
                    outcome = Rejected(INTERNAL, f"event not encodable: {type(exc).__name__}")
                else:
                    for key, body in encoded:
                        await sink.send(key=key, value=body)
                    continue
            headers = dead_letter_headers(
                topic=message.topic,
                partition=message.partition,
                offset=message.offset,
                format_id=config.format,
                code=outcome.code,
                reason=outcome.reason,
                parser_version=parser.version,
            )
            await dlq.send(key=message.key, value=raw, headers=headers)

    app.agent(source, name=f"binlake-{config.format}", sink=None)(normalize)
    return app


def parse_args(argv: Sequence[str] | None = None) -> PeerConfig:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.faust_peer", description=__doc__.split("\n")[0])
    parser.add_argument("--format", required=True, metavar="ID", help="vendor format id (binlake formats)")
    parser.add_argument("--input-topic", required=True, metavar="TOPIC")
    parser.add_argument("--output-topic", required=True, metavar="TOPIC", help="the unified topic")
    parser.add_argument("--dlq-topic", required=True, metavar="TOPIC")
    parser.add_argument("--group-id", required=True, metavar="ID", help="faust app id = consumer group id")
    parser.add_argument(
        "--bootstrap",
        default=os.environ.get(BOOTSTRAP_ENV),
        metavar="HOST:PORT",
        help=f"Kafka (default ${BOOTSTRAP_ENV})",
    )
    parser.add_argument("--source-timezone", default="UTC", metavar="TZ")
    parser.add_argument("--commit-interval", type=float, default=0.2, metavar="S", help="faust broker_commit_interval")
    args = parser.parse_args(argv)
    if not args.bootstrap:
        parser.error(f"give --bootstrap or set {BOOTSTRAP_ENV}")
    return PeerConfig(
        format=args.format,
        input_topic=args.input_topic,
        output_topic=args.output_topic,
        dlq_topic=args.dlq_topic,
        group_id=args.group_id,
        bootstrap=args.bootstrap,
        source_timezone=args.source_timezone,
        commit_interval_s=args.commit_interval,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    app = build_app(config)
    worker = faust.Worker(app, loglevel=logging.INFO, quiet=True, redirect_stdouts=False)
    worker.execute_from_commandline()
