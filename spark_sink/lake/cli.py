"""``binlake lake show|verify``: inspect the lake the Spark sink writes, and check it against the topic.

``show [TABLE]`` lists the lake's Delta tables (changelog, quarantine, each
source table's mirror, tombstones and history) with version, rows, last commit
and freshness (now - the newest source event time); with TABLE, that source
table in detail. It reads the Delta logs and data natively (delta-rs and
DuckDB, no Spark): about a second. ``verify`` reads the whole unified topic
(batch, ``read_committed``) and compares it with the changelog, the quarantine
and the mirrors: event counts, duplicates, the last ``order_key``, live keys.
Exit codes: 0 the lake matches the topic, 1 something differs (each difference
is printed), 2 usage or configuration error. ``--json`` prints one JSON
document instead of text.

``verify`` runs a local Spark session built like the sink's (``BINLAKE_SINK_*``
settings: master, packages, Ivy cache, log level); what the JVM prints (Ivy's
resolution report, Spark's warnings) goes to a log file, kept and named only
when verify fails, unless ``--verbose`` lets it through. ``--lake`` and
``--topic`` override ``BINLAKE_SINK_LAKE_URI`` and ``BINLAKE_SINK_TOPIC``. The
functions ``show`` and ``verify`` work in-process (``verify`` on an existing
SparkSession).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from binlake.shared.config.settings import KafkaSettings, kafka_settings, load
from binlake.spark_sink.settings import SinkSettings

if TYPE_CHECKING:  # Spark is imported only when verify runs (``binlake --help`` and ``lake show`` stay fast)
    from pyspark.sql import SparkSession

    from binlake.spark_sink.lake.verify import LakeFacts, Verdict


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="lake_command", required=True, metavar="ACTION")
    show_parser = sub.add_parser("show", help="list the lake's tables, or one source table in detail (no Spark)")
    show_parser.add_argument("table", nargs="?", metavar="TABLE", help="a source table name, e.g. shop.orders")
    verify_parser = sub.add_parser("verify", help="compare the changelog, quarantine and mirrors with the topic")
    verify_parser.add_argument("--topic", metavar="TOPIC", help="the unified topic (BINLAKE_SINK_TOPIC)")
    verify_parser.add_argument(
        "--bootstrap-servers", metavar="HOST:PORT", help="Kafka (BINLAKE_KAFKA_BOOTSTRAP_SERVERS)"
    )
    verify_parser.add_argument("--master", metavar="URL", help="Spark master (BINLAKE_SINK_MASTER, default local[*])")
    for each in (show_parser, verify_parser):
        each.add_argument("--lake", dest="lake_uri", metavar="URI", help="lake root (BINLAKE_SINK_LAKE_URI)")
        each.add_argument("--json", action="store_true", help="print one JSON document instead of text")
        each.add_argument("--verbose", action="store_true", help="let the libraries' own logs through (Spark, Ivy)")


def show(settings: SinkSettings, table: str | None = None, *, as_json: bool = False, out: IO[str]) -> int:
    """``binlake lake show [TABLE]``: prints to ``out``; returns the exit code (0)."""
    from binlake.spark_sink.lake import show as lake_show
    from binlake.spark_sink.lake.native import LakeReader

    lake = LakeReader(settings)
    try:
        result = lake_show.listing(lake) if table is None else lake_show.detail(lake, table)
    finally:
        lake.close()
    print(lake_show.render(result, as_json=as_json), file=out)
    return 0


def check(spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings) -> tuple[Verdict, LakeFacts]:
    """Gather the facts of the topic and the lake and compare them (no printing)."""
    from binlake.spark_sink.lake import facts as lake_facts
    from binlake.spark_sink.lake import verify as lake_verify

    facts = lake_facts.gather(spark, settings, kafka)
    return lake_verify.compare(facts), facts


def verify(
    spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings, *, as_json: bool = False, out: IO[str]
) -> int:
    """``binlake lake verify`` on an existing session; prints to ``out``; 0 when the lake matches, else 1."""
    from binlake.spark_sink.lake import verify as lake_verify
    from binlake.spark_sink.lake.text import to_json

    verdict, facts = check(spark, settings, kafka)
    text = to_json(lake_verify.render_json(verdict, facts)) if as_json else lake_verify.render_text(verdict)
    print(text, file=out)
    return verdict.exit_code()


@contextmanager
def process_output_to(log: Path | None) -> Iterator[None]:
    """Point this process's stdout and stderr (file descriptors 1 and 2) at ``log`` for the block.

    A child started inside the block, such as the JVM pyspark launches, inherits
    the log as its stdout and stderr and keeps writing there after the block:
    that is where Ivy's resolution report and Spark's warnings go. None: no change.
    """
    if log is None:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    target = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, target):
            os.close(fd)


def run(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {"lake_uri": args.lake_uri}
    if args.lake_command == "show":
        if not args.verbose:
            logging.getLogger().setLevel(logging.ERROR)
        return show(load(SinkSettings, **overrides), args.table, as_json=args.json, out=sys.stdout)
    overrides.update(master=args.master, topic=args.topic)
    settings = load(SinkSettings, **overrides)
    return _verify(settings, kafka_settings(args.bootstrap_servers), as_json=args.json, verbose=args.verbose)


def _verify(settings: SinkSettings, kafka: KafkaSettings, *, as_json: bool, verbose: bool) -> int:
    with spark_session(
        settings, app_name="binlake-lake-verify", command="binlake lake verify", verbose=verbose
    ) as spark:
        return verify(spark, settings, kafka, as_json=as_json, out=sys.stdout)


@contextmanager
def spark_session(settings: SinkSettings, *, app_name: str, command: str, verbose: bool) -> Iterator[SparkSession]:
    """A local Spark session built like the sink's (``BINLAKE_SINK_*``), stopped after the block. Unless
    ``verbose``, what the JVM prints goes to a log file, named on stderr (as ``command``'s) only if the block
    fails, else removed."""
    from binlake.spark_sink.session import build_session

    log: Path | None = None
    if not verbose:
        handle, name = tempfile.mkstemp(prefix=f"{app_name}-", suffix=".log")
        os.close(handle)
        log = Path(name)
        logging.getLogger("py4j").setLevel(logging.ERROR)
    failed = True
    try:
        with process_output_to(log):
            spark = build_session(settings, app_name=app_name)
        try:
            yield spark
        finally:
            spark.stop()
        failed = False
    finally:
        if log is not None:
            if failed:
                print(f"{command}: Spark's output is in {log}", file=sys.stderr)
            else:
                log.unlink(missing_ok=True)
