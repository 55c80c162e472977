"""``binlake current TABLE``: a source table as the changelog holds it now, read with Spark.

The rows are the table's current state (``spark_sink.mirror.current_state.current``: its mirror plus the
changelog's tail the mirror query has not applied yet, merged on read), printed as a grid or, with
``--json``, as one JSON document; ``--sql`` runs a Spark SQL query over them, the rows named ``current``
(``SELECT status, count(*) FROM current GROUP BY status``). Values print exactly: decimals in full,
timestamps with their microseconds (``TIMESTAMP`` in UTC), binary as hex. It starts a local Spark session
built like the sink's, as ``binlake lake verify`` does (``BINLAKE_SINK_*``: master, packages, Ivy cache; what
the JVM prints goes to a log file, named on stderr only if the command fails, unless ``--verbose``), and
reads any lake the sink can write. ``--lake`` overrides ``BINLAKE_SINK_LAKE_URI``; the mirror checkpoint is
the sink's (``BINLAKE_SINK_MIRROR_CHECKPOINT_URI``).

A command of the mirror package, not of ``binlake lake``: it applies the mirror's own rules to the tail, and
the lake tools import none of the writers' code (``tests/sink/test_sink_layout.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from decimal import Decimal
from typing import IO, TYPE_CHECKING, Any

from binlake.shared.config.settings import load
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.lake.text import grid, to_json
from binlake.spark_sink.settings import SinkSettings

if TYPE_CHECKING:  # Spark is imported only when the command runs (``binlake --help`` stays fast)
    from pyspark.sql import DataFrame, SparkSession

CURRENT_VIEW = "current"
"""The name ``--sql`` queries the rows by."""
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", metavar="TABLE", help="a source table name, e.g. shop.orders")
    parser.add_argument(
        "--sql", metavar="QUERY", help="a Spark SQL query over the rows, named current: SELECT count(*) FROM current"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="print at most N rows")
    parser.add_argument("--lake", dest="lake_uri", metavar="URI", help="lake root (BINLAKE_SINK_LAKE_URI)")
    parser.add_argument("--master", metavar="URL", help="Spark master (BINLAKE_SINK_MASTER, default local[*])")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--verbose", action="store_true", help="let the libraries' own logs through (Spark, Ivy)")


def run(args: argparse.Namespace) -> int:
    from binlake.spark_sink.lake.cli import spark_session

    if not args.verbose:
        logging.getLogger().setLevel(logging.ERROR)
    settings = load(SinkSettings, lake_uri=args.lake_uri, master=args.master)
    with spark_session(settings, app_name="binlake-current", command="binlake current", verbose=args.verbose) as spark:
        return current(spark, settings, args.table, sql=args.sql, limit=args.limit, as_json=args.json, out=sys.stdout)


def current(
    spark: SparkSession,
    settings: SinkSettings,
    table: str,
    *,
    sql: str | None = None,
    limit: int | None = None,
    as_json: bool = False,
    out: IO[str],
) -> int:
    """Print ``table``'s current state (or ``sql`` over it) to ``out``; return the exit code (0). Raises
    ``LakeError`` where the lake holds nothing of the table (no changelog, no mirror, no row event)."""
    from binlake.spark_sink import delta
    from binlake.spark_sink.mirror import current_state

    through = delta.current_version(spark, settings.changelog_uri())
    if through is None:
        raise LakeError(f"no changelog at {settings.changelog_uri()}: is {settings.lake()} the sink's lake?")
    frame = current_state.current(spark, settings, table)
    if not frame.columns:
        raise LakeError(
            f"the lake {settings.lake()} holds nothing of source table {table} (binlake lake show lists the tables)"
        )
    if sql is not None:
        frame.createOrReplaceTempView(CURRENT_VIEW)
        frame = spark.sql(sql)
    if limit is not None:
        frame = frame.limit(limit)
    columns, rows = _collected(frame)
    if as_json:
        document = {
            "table": table,
            "changelog_version": through,
            "columns": columns,
            "rows": [[_json_value(v) for v in row] for row in rows],
        }
        print(to_json(document), file=out)
    else:
        print(grid(columns, [[_text(v) for v in row] for row in rows]), file=out)
        print(f"({len(rows)} rows; the changelog through version {through})", file=out)
    return 0


def _collected(frame: DataFrame) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The frame's column names and rows as Python values; a ``TIMESTAMP`` as an aware UTC time (collected as
    microseconds: pyspark would make it a naive local time)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    instants = [i for i, f in enumerate(frame.schema.fields) if isinstance(f.dataType, TimestampType)]
    columns = frame.columns
    if instants:
        frame = frame.select(
            *[
                F.unix_micros(frame[i]).alias(name) if i in instants else frame[i].alias(name)
                for i, name in enumerate(columns)
            ]
        )
    rows = []
    for row in frame.collect():
        values = list(row)
        for i in instants:
            if values[i] is not None:
                values[i] = EPOCH + dt.timedelta(microseconds=values[i])
        rows.append(tuple(values))
    return columns, rows


def _text(value: Any) -> object:
    if isinstance(value, bytes | bytearray):
        return "0x" + bytes(value).hex()
    if isinstance(value, dt.datetime | dt.date | dt.time):
        return value.isoformat()
    return value


def _json_value(value: Any) -> object:
    """Exact JSON: decimals and integers beyond 2^53 as strings, binary as hex, times as ISO-8601."""
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return str(value)
    if isinstance(value, bytes | bytearray | dt.datetime | dt.date | dt.time):
        return _text(value)
    return value
