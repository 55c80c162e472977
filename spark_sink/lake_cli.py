"""``binlake lake show|verify``: inspect the lake the Spark sink writes, and check it against the topic.

``show [TABLE]`` lists the lake's Delta tables (changelog, quarantine, each
source table's mirror, tombstones and history) with version, rows, last commit
and freshness (now - the newest source event time); with TABLE, that source
table in detail. ``verify`` reads the whole unified topic (batch,
``read_committed``) and compares it with the changelog, the quarantine and the
mirrors: event counts, duplicates, the last ``order_key``, live keys. Exit
codes: 0 the lake matches the topic, 1 something differs (each difference is
printed), 2 usage or configuration error. ``--json`` prints one JSON document
instead of text.

Both run a local Spark session built like the sink's (``BINLAKE_SINK_*``
settings: master, packages, Ivy cache, log level); ``--lake`` and ``--topic``
override ``BINLAKE_SINK_LAKE_URI`` and ``BINLAKE_SINK_TOPIC``. The functions
``show`` and ``verify`` take an existing SparkSession, for use in-process.
"""

from __future__ import annotations

import argparse
import sys
from typing import IO, TYPE_CHECKING, Any

from shared.config.settings import KafkaSettings, kafka_settings, load
from spark_sink.settings import SinkSettings

if TYPE_CHECKING:  # Spark is imported only when a command runs (``binlake --help`` stays fast)
    from pyspark.sql import SparkSession

    from spark_sink.lake_verify import LakeFacts, Verdict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lake_command", required=True, metavar="ACTION")
    show_parser = sub.add_parser("show", help="list the lake's tables, or one source table in detail")
    show_parser.add_argument("table", nargs="?", metavar="TABLE", help="a source table name, e.g. shop.orders")
    verify_parser = sub.add_parser("verify", help="compare the changelog, quarantine and mirrors with the topic")
    verify_parser.add_argument("--topic", metavar="TOPIC", help="the unified topic (BINLAKE_SINK_TOPIC)")
    verify_parser.add_argument(
        "--bootstrap-servers", metavar="HOST:PORT", help="Kafka (BINLAKE_KAFKA_BOOTSTRAP_SERVERS)"
    )
    for each in (show_parser, verify_parser):
        each.add_argument("--lake", dest="lake_uri", metavar="URI", help="lake root (BINLAKE_SINK_LAKE_URI)")
        each.add_argument("--master", metavar="URL", help="Spark master (BINLAKE_SINK_MASTER, default local[*])")
        each.add_argument("--json", action="store_true", help="print one JSON document instead of text")


def show(
    spark: SparkSession, settings: SinkSettings, table: str | None = None, *, as_json: bool = False, out: IO[str]
) -> int:
    """``binlake lake show [TABLE]`` on an existing session; prints to ``out``; returns the exit code (0)."""
    from spark_sink import lake_show

    result = lake_show.listing(spark, settings) if table is None else lake_show.detail(spark, settings, table)
    print(lake_show.render(result, as_json=as_json), file=out)
    return 0


def check(spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings) -> tuple[Verdict, LakeFacts]:
    """Gather the facts of the topic and the lake and compare them (no printing)."""
    from spark_sink import lake_facts, lake_verify

    facts = lake_facts.gather(spark, settings, kafka)
    return lake_verify.compare(facts), facts


def verify(
    spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings, *, as_json: bool = False, out: IO[str]
) -> int:
    """``binlake lake verify`` on an existing session; prints to ``out``; 0 when the lake matches, else 1."""
    from spark_sink import lake_verify
    from spark_sink.lake_text import to_json

    verdict, facts = check(spark, settings, kafka)
    text = to_json(lake_verify.render_json(verdict, facts)) if as_json else lake_verify.render_text(verdict)
    print(text, file=out)
    return verdict.exit_code()


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {"lake_uri": args.lake_uri, "master": args.master}
    if args.lake_command == "verify":
        overrides["topic"] = args.topic
    settings = load(SinkSettings, **overrides)
    kafka = kafka_settings(args.bootstrap_servers) if args.lake_command == "verify" else None

    from spark_sink.session import build_session

    spark = build_session(settings, app_name=f"binlake-lake-{args.lake_command}")
    try:
        if kafka is not None:
            return verify(spark, settings, kafka, as_json=args.json, out=sys.stdout)
        return show(spark, settings, args.table, as_json=args.json, out=sys.stdout)
    finally:
        spark.stop()
