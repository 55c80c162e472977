"""``binlake normalizer``: the Kafka normalizer service for one vendor format.

Consumes the vendor topics, publishes canonical events (Avro single-object
encoding) to the unified topic and dead letters to the dead-letter topic, one
Kafka transaction per partition batch. Configuration comes from ``BINLAKE_*``
environment variables (docs/configuration.md); the options below override them.
Stops cleanly on SIGTERM or SIGINT.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
from typing import Any

from binlake.shared import logs
from binlake.shared.cli import stopping
from binlake.shared.config.settings import KafkaSettings, NormalizerSettings, kafka_settings, load


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", metavar="ID", help="vendor format id (BINLAKE_FORMAT)")
    parser.add_argument("--input-topics", metavar="T1,T2", help="vendor topics (BINLAKE_INPUT_TOPICS)")
    parser.add_argument("--output-topic", metavar="TOPIC", help="unified topic (BINLAKE_OUTPUT_TOPIC)")
    parser.add_argument("--dlq-topic", metavar="TOPIC", help="dead-letter topic (BINLAKE_DLQ_TOPIC)")
    parser.add_argument("--group-id", metavar="ID", help="consumer group (BINLAKE_GROUP_ID)")
    parser.add_argument("--bootstrap-servers", metavar="HOST:PORT", help="Kafka (BINLAKE_KAFKA_BOOTSTRAP_SERVERS)")
    parser.add_argument("--metrics-port", type=int, metavar="PORT", help="metrics/health port (BINLAKE_METRICS_PORT)")


def load_settings(overrides: dict[str, Any]) -> tuple[NormalizerSettings, KafkaSettings]:
    given = dict(overrides)
    bootstrap = given.pop("bootstrap_servers", None)
    return load(NormalizerSettings, **given), kafka_settings(bootstrap)


def run(args: argparse.Namespace) -> int:
    # A SIGTERM during start-up (imports, settings) must still mean a clean stop: held since
    # ``binlake``'s first line (shared.cli.stopping), again here for a caller that skipped main.
    stopping.hold()
    settings, kafka = load_settings(
        {
            "format": args.format,
            "input_topics": args.input_topics,
            "output_topic": args.output_topic,
            "dlq_topic": args.dlq_topic,
            "group_id": args.group_id,
            "metrics_port": args.metrics_port,
            "bootstrap_servers": args.bootstrap_servers,
        }
    )
    logs.setup(settings.log_level)
    return asyncio.run(serve(settings, kafka))


async def serve(settings: NormalizerSettings, kafka: KafkaSettings) -> int:
    from binlake.shared.kafka.runtime import Normalizer

    log = logging.getLogger("binlake")
    normalizer = Normalizer(settings, kafka)
    loop = asyncio.get_running_loop()

    def stop(signum: int, when: str) -> None:
        # An operator (or Kubernetes) sees in the log why the normalizer left and that it left cleanly.
        log.info("normalizer stopping", extra={"signal": signal.Signals(signum).name, "when": when})
        normalizer.stop()

    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop, signum, "running")
    held = stopping.requested()
    if held is not None:  # a signal held during start-up
        stop(held, "during start-up")
    log.info(
        "normalizer starting", extra={"format": settings.format, "pid": os.getpid(), "kafka": kafka.bootstrap_servers}
    )
    await normalizer.run()
    log.info("normalizer stopped", extra={"format": settings.format})
    return 0
