"""``binlake formats``: the vendor format ids this build knows.

With ``--markdown``, prints docs/formats.md: the reference of every format, made
from the parsers' own module documentation so the two cannot drift apart (a
unit test compares them).
"""

from __future__ import annotations

import argparse
import inspect

from binlake.shared.native import module_docstring
from binlake.shared.parsing import registry

_INTRO = """\
# Vendor formats

Each format id names one vendor message shape. Every parser is a pure function
(`services/<format>/parser.py`): the bytes of one message in, canonical events
(docs/canonical-event.md) or a reject with a reason out. This page is generated
from the parsers' documentation by `binlake formats --markdown`. A format of your
own is one folder of Python, registered without changing binlake
(`BINLAKE_FORMAT_SPECS`; docs/development.md, "Adding a vendor format").

Common to all formats:

- One event per changed row; heartbeats and transaction markers produce no event
  (they are counted as control messages; heartbeats feed freshness figures).
- A column absent from an image is unknown; present with null is SQL NULL.
- Where the vendor gives column types they are used (`source_type` keeps the
  vendor's text); where it gives none, types are inferred from the JSON values and
  columns say `inferred: true`. JSON numbers are read exactly (a fractional
  number never passes through a binary float where its digits matter).
- A row whose message names primary key columns that its identifying image lacks
  is rejected (`inconsistent`): its key is unknown, so it cannot be applied.
- A reject's reason names the field or column, its declared type and what was
  expected, and describes the offending value by kind and size only
  (`data[0] column 'id' (type int(11)): expected an integer, got a string of 6
  characters`): it never quotes a row value or part of one, nor echoes the
  document in a JSON syntax error, since reasons travel in dead-letter headers,
  logs and `binlake normalize`'s output. Names, types and envelope words (an
  unknown op, a binlog file name) are not row data and are quoted.
- A value is read by its column's declared type (the native kernel's typed values:
  `shared/kernel/src/conversion.rs`). Integers, decimals and floats are read as
  Python's `int()`, `Decimal()` and `float()` read them (surrounding blanks and a
  sign allowed, `_` not); an integer beyond what its declared type holds (3000000000
  in an `int(11)`, -1 in a `bigint unsigned`) is a `bad_value` reject naming the
  column and the range, never a NULL or a wrapped number; dates and date-times as `date.fromisoformat` and
  `datetime.fromisoformat` do, with MySQL zero dates kept verbatim; the digits of
  a TIME, of epoch seconds, of a type's parameters (`decimal(10,2)`), of a
  date-time followed by a zone name and of Tencent CKafka's `yyyyMMddHHmmss`
  are ASCII.
- A truncate that comes without SQL is a `TRUNCATE` event with an empty `ddl.sql`
  and kind `TRUNCATE_TABLE`: binlake invents no statement.
- Every `order_key` has the shape `major.minor.row` (20, 20 and 6 digits); each
  format below says what major and minor are. The rule: a real log position
  where the vendor gives one on every message (binlog file and offset,
  GoldenGate trail position, PostgreSQL LSN, DRS's event sequence), with the
  row index last; otherwise the input's Kafka order (input partition, input
  offset, row index). Never a timestamp (event times are not monotonic across
  transactions), and never a row index that can sort ahead of a later
  message's key. Kafka-order keys compare only within one input partition, so
  the vendor's partitioning must keep each row's changes in one partition
  (docs/canonical-event.md, "order_key").
- Options (`--option KEY=VALUE`, `BINLAKE_FORMAT_OPTIONS`) are checked when a
  service or `binlake normalize` starts: one the format does not read, or a value
  of the wrong kind, stops it with an error naming the format's options. A format
  without an options table reads none.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--markdown", action="store_true", help="print the formats reference (docs/formats.md)")


def markdown() -> str:
    parts = [_INTRO]
    parsers = {format_id: registry.spec(format_id).parse.__module__ for format_id in registry.FORMATS}
    seen: set[str] = set()
    for module_name in parsers.values():
        if module_name in seen:
            continue
        seen.add(module_name)
        ids = [format_id for format_id, parser in parsers.items() if parser == module_name]
        # The docstrings are reStructuredText-ish: "::" introduces an indented
        # block, which Markdown shows as code once the marker is dropped.
        doc = inspect.cleandoc(module_docstring(module_name) or "").replace("::\n", ":\n").replace("\n:\n", "\n")
        title, _, body = doc.partition("\n")
        parts.append(f"## {', '.join(f'`{i}`' for i in ids)}\n\n{title.split(': ', 1)[-1]}\n{body}\n")
        parts.extend(_options(format_id) for format_id in ids if registry.spec(format_id).options)
    return "\n".join(parts)


def _options(format_id: str) -> str:
    """The option table of a format (``--option KEY=VALUE``, ``BINLAKE_FORMAT_OPTIONS``)."""
    rows = "".join(f"| `{name}` | {text} |\n" for name, text in registry.spec(format_id).option_docs().items())
    return f"Options of `{format_id}` (any other stops the start):\n\n| option | meaning |\n|---|---|\n{rows}"


def run(args: argparse.Namespace) -> int:
    if args.markdown:
        print(markdown(), end="")
        return 0
    for format_id in registry.format_ids():
        print(format_id)
    return 0
