"""``csvish``: a made-up line format, one row change per line, written only for tests.

It proves that a format is one folder of Python: it lives outside ``services/``, is
not in the built-in ``FORMATS`` table and has no native code; the tests register it
through the public registry (``registry.register``, ``BINLAKE_FORMAT_SPECS``). A line::

    OP|DATABASE.TABLE|BINLOG_FILE:OFFSET|TS_MS|COLUMNS[|OLD]

- ``OP``: ``I`` (insert), ``U`` (update) or ``D`` (delete).
- ``COLUMNS``: ``;``-separated ``[*]name:type[=value]``: ``*`` marks a primary key
  column, ``type`` is the MySQL column type (``bigint unsigned``, ``decimal(10,2)``),
  and a column without ``=value`` is NULL. Values are percent-encoded where they hold
  ``%``, ``;`` or ``|``. The row: the inserted row, the new row of an update, the
  deleted row of a delete.
- ``OLD`` (updates only, required): ``;``-separated ``name=value``, the prior values
  of the changed columns, typed by ``COLUMNS``: ``before`` is the row overlaid with
  them and ``changed_columns`` their names.

Order key: major = the binlog file's sequence number, minor = the offset, row 0.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final
from urllib.parse import unquote

from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import Image
from binlake.shared.parsing.common import epoch_ms, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    INCONSISTENT,
    MALFORMED,
    UNSUPPORTED,
    RejectError,
    decoder_problem,
)
from binlake.shared.parsing.order import binlog_index, order_key
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.rows import RowTypes, overlay

FORMAT_ID: Final = "csvish"
PARSER_VERSION: Final = "1"

_OPS: Final[dict[str, Op]] = {"I": "INSERT", "U": "UPDATE", "D": "DELETE"}
_MAX_OFFSET_DIGITS: Final = 19
RawImage = dict[str, str | None]


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    try:
        line = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RejectError(MALFORMED, f"not a csvish line: {decoder_problem(exc)}") from None
    fields = line.split("|")
    op = _OPS.get(fields[0])
    if op is None:
        raise RejectError(UNSUPPORTED, f"unknown op {fields[0][:20]!r} (expected I, U or D)")
    expected = 6 if op == "UPDATE" else 5
    if len(fields) != expected:
        raise RejectError(MALFORMED, f"{op} line: expected {expected} '|'-separated fields, got {len(fields)}")
    database, dot, table = fields[1].partition(".")
    if not (database and dot and table):
        raise RejectError(BAD_FIELD, f"field 2 must be 'database.table', got {fields[1][:80]!r}")
    binlog_file, offset = _position(fields[2])
    ts_ms = _ts_ms(fields[3])
    keys, declared, row = _columns(fields[4])
    types = _row_types(declared)
    image = types.convert(row, "row")
    before: Image | None = None
    after: Image | None = image
    changed: list[str] | None = None
    if op == "UPDATE":
        old = _old(fields[5], declared)
        before = overlay(image, types.convert(old, "old"))
        changed = list(old)
    elif op == "DELETE":
        before, after = image, None
    event = ChangeEvent(
        op=op,
        source=Source(
            format=FORMAT_ID,
            db_type="MYSQL",
            database=database,
            schema=None,
            table=table,
            binlog_file=binlog_file,
            binlog_pos=offset,
        ),
        order_key=order_key(binlog_index(binlog_file), offset, 0),
        ts_ms=ts_ms,
        ingest_ts_ms=None,
        primary_key=keys,
        columns=types.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=changed,
        ddl=None,
        origin=origin(ctx, 0),
    )
    return Parsed([event])


def _position(text: str) -> tuple[str, int]:
    binlog_file, _, offset = text.rpartition(":")
    if not binlog_file or not offset.isascii() or not offset.isdigit() or len(offset) > _MAX_OFFSET_DIGITS:
        raise RejectError(BAD_FIELD, f"field 3 must be 'binlog-file:offset', got {text[:80]!r}")
    return binlog_file, int(offset)


def _ts_ms(text: str) -> int:
    digits = text.removeprefix("-")
    if not digits.isascii() or not digits.isdigit() or len(digits) > _MAX_OFFSET_DIGITS:
        raise RejectError(BAD_FIELD, f"field 4 must be the event time in epoch milliseconds, got {text[:40]!r}")
    return epoch_ms(int(text))


def _value(text: str, name: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise RejectError(BAD_FIELD, f"column {name!r}: its percent-encoding is not UTF-8") from None


def _columns(text: str) -> tuple[list[str], tuple[tuple[str, str], ...], RawImage]:
    """The primary key, the declared types and the raw row of ``COLUMNS``."""
    keys: list[str] = []
    declared: list[tuple[str, str]] = []
    row: RawImage = {}
    for item in text.split(";") if text else ():
        head, eq, value = item.partition("=")
        name, colon, type_text = head.partition(":")
        key = name.startswith("*")
        name = name.removeprefix("*")
        if not (name and colon and type_text.strip()):
            raise RejectError(BAD_FIELD, f"column {item[:40].partition('=')[0]!r} must be '[*]name:type[=value]'")
        if name in row:
            raise RejectError(INCONSISTENT, f"column {name!r} appears twice")
        if key:
            keys.append(name)
        declared.append((name, type_text.strip()))
        row[name] = _value(value, name) if eq else None
    if not row:
        raise RejectError(BAD_FIELD, "field 5 names no column")
    return keys, tuple(declared), row


def _old(text: str, declared: tuple[tuple[str, str], ...]) -> RawImage:
    """The prior values of an update's changed columns (``OLD``)."""
    names = {name for name, _ in declared}
    old: RawImage = {}
    for item in text.split(";") if text else ():
        name, eq, value = item.partition("=")
        if name not in names:
            raise RejectError(INCONSISTENT, f"field 6 gives a prior value of {name[:40]!r}, a column field 5 lacks")
        old[name] = _value(value, name) if eq else None
    if not old:
        raise RejectError(BAD_FIELD, "an update's field 6 names no changed column")
    return old


@lru_cache(maxsize=256)
def _row_types(declared: tuple[tuple[str, str], ...]) -> RowTypes:
    """The types of one table shape, built once (as the real parsers cache theirs)."""
    return RowTypes.from_texts(declared)
