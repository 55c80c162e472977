"""``binlake current TABLE``: a source table as the changelog holds it now, read without Spark.

The rows are the table's current state (``spark_sink.mirror.current_duckdb``: its mirror plus the
changelog's tail the mirror writer has not applied yet, merged on read), printed as a grid or, with
``--json``, as one JSON document; ``--sql`` runs a DuckDB query over them, the rows named ``current``
(``SELECT status, count(*) FROM current GROUP BY status``). Values print exactly: decimals in full,
timestamps with their microseconds (``TIMESTAMP WITH TIME ZONE`` in UTC), binary as hex. ``--lake``
overrides ``BINLAKE_SINK_LAKE_URI``; the mirror checkpoint is the sink's (``BINLAKE_SINK_MIRROR_CHECKPOINT_URI``).

A command of the mirror package, not of ``binlake lake``: it applies the mirror's own rules to the tail, and
the lake tools import none of the writers' code (``tests/sink/test_sink_layout.py``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import logging
import sys
from decimal import Decimal
from typing import IO, Any

from binlake.shared.config.settings import load
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.lake.text import grid, to_json
from binlake.spark_sink.settings import SinkSettings

CURRENT_VIEW = "current"
"""The name ``--sql`` queries the rows by."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("table", metavar="TABLE", help="a source table name, e.g. shop.orders")
    parser.add_argument(
        "--sql", metavar="QUERY", help="a DuckDB query over the rows, named current: SELECT count(*) FROM current"
    )
    parser.add_argument("--limit", type=int, metavar="N", help="print at most N rows")
    parser.add_argument("--lake", dest="lake_uri", metavar="URI", help="lake root (BINLAKE_SINK_LAKE_URI)")
    parser.add_argument("--json", action="store_true", help="print one JSON document instead of text")
    parser.add_argument("--verbose", action="store_true", help="let the libraries' own logs through")


def run(args: argparse.Namespace) -> int:
    if not args.verbose:
        logging.getLogger().setLevel(logging.ERROR)
    settings = load(SinkSettings, lake_uri=args.lake_uri)
    return current(settings, args.table, sql=args.sql, limit=args.limit, as_json=args.json, out=sys.stdout)


def current(
    settings: SinkSettings,
    table: str,
    *,
    sql: str | None = None,
    limit: int | None = None,
    as_json: bool = False,
    out: IO[str],
) -> int:
    """Print ``table``'s current state (or ``sql`` over it) to ``out``; return the exit code (0)."""
    from binlake.spark_sink.mirror.current_duckdb import CurrentStates

    states = CurrentStates(settings)
    try:
        found = states.read([table])
        if table not in found:
            raise LakeError(
                f"the lake {settings.lake()} holds nothing of source table {table} (binlake lake show lists the tables)"
            )
        relation = found[table]
        if sql is not None:
            relation = relation.query(CURRENT_VIEW, sql)
        if limit is not None:
            relation = relation.limit(limit)
        columns = list(relation.columns)
        rows = relation.fetchall()
        through = states.through
    finally:
        states.close()
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
