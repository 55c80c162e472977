"""quix-streams as a measured peer of the normalizer (``make bench``), on confluent-kafka / librdkafka.

``python -m tests.bench.quix_peer --mode normalize --format ID --input-topic T --output-topic T2
--dlq-topic T3 --group-id G --bootstrap HOST:PORT`` runs one quix-streams ``Application`` with
``processing_guarantee="exactly-once"``, Kafka to Kafka:

- ``normalize``: the normalizer's work per message through quix's StreamingDataFrame: binlake's
  codec (``shared.normalize.codec_for``, the call ``shared.kafka.runtime.Normalizer`` makes, with
  the settings the bench gives the normalizer), each record keyed as the normalizer
  keys it, rejects dead-lettered with the normalizer's letter and ``binlake.*`` headers. Only the
  client and the stream framework differ from the normalizer;
- ``passthrough``: the same application copying each message's bytes (key and value): the
  ceiling of quix and librdkafka on this broker, as the aiokafka passthrough is for the normalizer.

Exactly once, as quix does it: one transactional producer (``transactional.id`` set by quix),
a checkpoint every ``--commit-interval`` seconds or ``--commit-every`` messages commits the
produced records and the input offsets in one transaction; the consumer reads
``isolation.level=read_committed``. The client settings are the normalizer's (linger 5 ms,
256 KiB batches, lz4, 4 MiB fetches) and the partitioner is librdkafka's ``consistent``:
CRC-32 of the key modulo the partition count, ``shared.kafka.records.partition_for``'s rule, so
every record lands on the partition the normalizer gives it. The effective settings are printed
as one JSON line (``{"quix_peer": ...}``) before processing starts; SIGTERM stops it (quix
commits its last checkpoint).

Not a binlake service: no metrics, no ``binlake dlq replay`` coordinates, no refusal handling.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import logging
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import orjson

from binlake.shared.config.settings import NormalizerSettings
from binlake.shared.kafka.letters import dead_letter
from binlake.shared.kafka.records import dead_letter_headers
from binlake.shared.normalize import Codec, TableFilter, codec_for
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.result import Rejected

if TYPE_CHECKING:
    from quixstreams import Application

BOOTSTRAP_ENV: Final = "BINLAKE_KAFKA_BOOTSTRAP_SERVERS"
MODES: Final = ("normalize", "passthrough")

Headers = list[tuple[str, bytes]]
Out = tuple[bytes | None, bytes, Headers | None]
"""One record the peer produces: (key, value, dead-letter headers, or None for a unified-topic record)."""


def peer_codec(settings: NormalizerSettings) -> Codec:
    """The codec ``shared.kafka.runtime.Normalizer`` makes from ``settings`` (same call, same arguments)."""
    options: dict[str, Any] = dict(settings.format_options)
    if settings.avro_schema_file:
        options["avro_schema"] = orjson.loads(Path(settings.avro_schema_file).read_bytes())
    return codec_for(
        settings.format,
        ParseContext(source_timezone=zone(settings.source_timezone), options=options),
        topic_tables=settings.topic_tables,
        tables=TableFilter.of(settings.include_tables, settings.exclude_tables),
    )


class Normalize:
    """The peer's work per message: the normalizer's records, or its dead letter (no Kafka, no quix)."""

    def __init__(self, codec: Codec, *, dlq_max_value_bytes: int) -> None:
        self.codec = codec
        self.dlq_max_value_bytes = dlq_max_value_bytes

    def __call__(self, raw: bytes, key: bytes | None, topic: str, partition: int, offset: int) -> list[Out]:
        outcome = self.codec(raw, topic, partition, offset)
        if isinstance(outcome, Rejected):
            headers = dead_letter_headers(
                topic=topic,
                partition=partition,
                offset=offset,
                format_id=self.codec.format_id,
                code=outcome.code,
                reason=outcome.reason,
                parser_version=self.codec.version,
            )
            letter = dead_letter(key, raw, headers, max_value_bytes=self.dlq_max_value_bytes)
            return [(letter.key, letter.value, letter.headers)]
        return [(values[i], values[i + 1], None) for _, _, _, values in outcome.rows for i in range(0, len(values), 2)]


@dataclass(frozen=True, slots=True)
class PeerConfig:
    mode: str
    format: str
    input_topic: str
    output_topic: str
    dlq_topic: str
    group_id: str
    bootstrap: str
    commit_interval_s: float = 0.2
    """The normalizer's batch bound in time (``BINLAKE_BATCH_MAX_MS``; quix's default is 5 s)."""
    commit_every: int = 2000
    """The normalizer's batch bound in messages (``BINLAKE_BATCH_MAX_MESSAGES``; quix's default: none)."""


def client_config() -> tuple[dict[str, Any], dict[str, Any]]:
    """librdkafka settings of the producer and the consumer: the normalizer's client settings."""
    compression = NormalizerSettings.model_fields["compression"].default
    producer = {
        "linger.ms": 5,
        "batch.size": 256 * 1024,
        "message.max.bytes": 16 * 1024 * 1024,
        "compression.type": compression,
        "partitioner": "consistent",  # CRC-32 % partitions: partition_for's rule
    }
    consumer = {"isolation.level": "read_committed", "max.partition.fetch.bytes": 4 * 1024 * 1024}
    return producer, consumer


def _record_value(value: Out) -> bytes:
    return value[1]


def build_app(config: PeerConfig, state_dir: Path) -> Application:
    """The quix Application: input topic -> (codec | copy) -> unified topic / dead-letter topic, exactly once."""
    from quixstreams import Application, message_context
    from quixstreams.models.serializers import Serializer

    class RecordValue(Serializer):
        """Writes the value of an ``Out`` (the key goes through ``to_topic(key=...)``)."""

        def __call__(self, *args: Any, **kwargs: Any) -> bytes:
            return _record_value(args[0])

    producer, consumer = client_config()
    app = Application(
        broker_address=config.bootstrap,
        consumer_group=config.group_id,
        processing_guarantee="exactly-once",
        auto_offset_reset="earliest",
        commit_interval=config.commit_interval_s,
        commit_every=config.commit_every,
        producer_extra_config=producer,
        consumer_extra_config=consumer,
        auto_create_topics=False,  # the bench creates every topic
        use_changelog_topics=False,  # stateless
        state_dir=state_dir,
        loglevel="WARNING",
    )
    source = app.topic(config.input_topic, key_deserializer="bytes", value_deserializer="bytes")
    sdf = app.dataframe(source)
    if config.mode == "passthrough":
        sdf.to_topic(app.topic(config.output_topic, key_serializer="bytes", value_serializer="bytes"))
        return app
    output = app.topic(config.output_topic, key_serializer="bytes", value_serializer=RecordValue())
    dlq = app.topic(config.dlq_topic, key_serializer="bytes", value_serializer=RecordValue())
    with tempfile.TemporaryDirectory(prefix="quix-peer-schema-") as folder:
        # The settings the bench gives the normalizer (a format's Avro schema goes through a file, read here).
        from tests.support.pipeline import Topics, normalizer_settings

        settings = normalizer_settings(
            config.format,
            Topics(config.input_topic, config.output_topic, config.dlq_topic, config.group_id),
            Path(folder),
            "UTC",
        )
        work = Normalize(peer_codec(settings), dlq_max_value_bytes=settings.dlq_max_value_bytes)

    def normalize(value: bytes, key: bytes | None, timestamp: int, headers: Any) -> list[Out]:
        at = message_context()
        return work(value, key, at.topic, at.partition, at.offset)

    def letter_headers(value: Out, key: Any, timestamp: int, headers: Any) -> Headers:
        return value[2] or []  # a record: no headers (the normalizer's have none), not the input's

    def destination(value: Out, key: Any, timestamp: int, headers: Any) -> Any:
        return output if value[2] is None else dlq

    def record_key(value: Out) -> bytes | None:
        return value[0]

    sdf = sdf.apply(normalize, expand=True, metadata=True)
    sdf = sdf.set_headers(letter_headers)
    sdf.to_topic(destination, key=record_key)
    return app


def describe(app: Application, config: PeerConfig) -> dict[str, Any]:
    """What makes the run exactly once, as the application holds it (printed for the bench to check)."""
    import quixstreams

    confluent_kafka = importlib.import_module("confluent_kafka")  # untyped

    settings = app.config
    producer = settings.producer_extra_config
    consumer = settings.consumer_extra_config
    return {
        "mode": config.mode,
        "quixstreams": quixstreams.__version__,
        "confluent_kafka": importlib.metadata.version("confluent-kafka"),
        "librdkafka": confluent_kafka.libversion()[0],
        "processing_guarantee": settings.processing_guarantee,
        "transactional_id": bool(producer.get("transactional.id")),
        "enable_idempotence": producer.get("enable.idempotence"),
        "isolation_level": consumer.get("isolation.level"),
        "commit_interval_s": settings.commit_interval,
        "commit_every": settings.commit_every,
        "compression": producer.get("compression.type"),
        "partitioner": producer.get("partitioner"),
    }


def parse_args(argv: Sequence[str] | None = None) -> PeerConfig:
    parser = argparse.ArgumentParser(prog="python -m tests.bench.quix_peer", description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=MODES, default="normalize")
    parser.add_argument("--format", required=True, metavar="ID", help="vendor format id (binlake formats)")
    parser.add_argument("--input-topic", required=True, metavar="TOPIC")
    parser.add_argument("--output-topic", required=True, metavar="TOPIC", help="the unified topic")
    parser.add_argument("--dlq-topic", required=True, metavar="TOPIC")
    parser.add_argument("--group-id", required=True, metavar="ID", help="the consumer group")
    parser.add_argument("--bootstrap", default=os.environ.get(BOOTSTRAP_ENV), metavar="HOST:PORT")
    parser.add_argument("--commit-interval", type=float, default=0.2, metavar="S", help="seconds per checkpoint")
    parser.add_argument("--commit-every", type=int, default=2000, metavar="N", help="messages per checkpoint")
    args = parser.parse_args(argv)
    if not args.bootstrap:
        parser.error(f"give --bootstrap or set {BOOTSTRAP_ENV}")
    return PeerConfig(
        mode=args.mode,
        format=args.format,
        input_topic=args.input_topic,
        output_topic=args.output_topic,
        dlq_topic=args.dlq_topic,
        group_id=args.group_id,
        bootstrap=args.bootstrap,
        commit_interval_s=args.commit_interval,
        commit_every=args.commit_every,
    )


def main(argv: Sequence[str] | None = None) -> int:
    config = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="quix-peer-state-") as state_dir:
        app = build_app(config, Path(state_dir))
        print(json.dumps({"quix_peer": describe(app, config)}), flush=True)
        app.run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
