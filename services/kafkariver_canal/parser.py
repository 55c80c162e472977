"""``kafkariver-canal``: KafkaRiverCanal, Canal binlog rows as one JSON message per row.

::

    {"binlog": "6816@mysql-bin.000070", "time": ms, "canalTime": ms,
     "db", "table", "event": "i" | "u" | "d",
     "columns": [{"n": name, "t": "decimal(10,4)", "v": "text", "null": false,
                  "updated": bool, "origin_val": "old text"}, ...],
     "keys": [pk names]}

``time`` is when the binlog entry was written (``ts_ms``), ``canalTime`` when
it reached KafkaRiverCanal (``ingest_ts_ms``). Values are typed by ``t`` (MySQL
type text); binary values are read as ISO-8859-1 text, one character per byte,
as the Canal client renders them (option ``bytes_encoding`` overrides).
``null: true`` means SQL NULL whatever ``v`` holds.

For ``u`` the prior row is rebuilt column by column: ``origin_val`` where
``updated`` is true, ``v`` where it is false. A column whose ``updated`` flag is
absent, or which is updated without an ``origin_val``, is left out of
``before`` (unknown). Canal renders a NULL as an empty string and the format has
no null flag for the old value, so an empty ``origin_val`` that the column type
cannot read (a number, a date) is also left unknown rather than guessed NULL.
``changed_columns`` are the columns with ``updated: true``.

Order key: major = binlog file index (``mysql-bin.000070`` -> 70), minor = the
binlog offset before the ``@``; one row per message, so row index 0.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Final

from binlake.shared.event.model import ChangeEvent, Column, Op, Source
from binlake.shared.event.values import INT64_MAX, INT64_MIN, Image, Value
from binlake.shared.parsing.binary import BYTES_ENCODINGS, BytesEncoding
from binlake.shared.parsing.common import blank_to_none, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    BAD_VALUE,
    CONFIG,
    INCONSISTENT,
    MISSING_FIELD,
    UNSUPPORTED,
    WRONG_FORMAT,
    RejectError,
    value_problem,
)
from binlake.shared.parsing.jsondoc import decode_and_parse, opt_int, req, req_str, str_list
from binlake.shared.parsing.order import binlog_index, order_key
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.rows import RowTypes, require_key_columns
from binlake.shared.parsing.sqltypes import infer

FORMAT_ID: Final = "kafkariver-canal"
PARSER_VERSION: Final = "1"

_OPS: Final[dict[str, Op]] = {"i": "INSERT", "u": "UPDATE", "d": "DELETE"}
_CONVERSION_ERRORS: Final = (ValueError, TypeError, ArithmeticError)
_TYPE_CACHE: dict[tuple[Any, ...], RowTypes] = {}
_TYPE_CACHE_LIMIT: Final = 4096


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    encoding = _bytes_encoding(ctx)
    return decode_and_parse(raw, lambda doc: _parse_doc(doc, ctx, encoding))


def _bytes_encoding(ctx: ParseContext) -> BytesEncoding:
    value = ctx.options.get("bytes_encoding", "latin1")
    if value not in BYTES_ENCODINGS:
        raise RejectError(CONFIG, f"option bytes_encoding must be one of {', '.join(BYTES_ENCODINGS)}, got {value!r}")
    encoding: BytesEncoding = value
    return encoding


def _parse_doc(doc: Any, ctx: ParseContext, encoding: BytesEncoding) -> Parsed:
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a KafkaRiverCanal message)")
    if not any(key in doc for key in ("binlog", "event", "columns")):
        raise RejectError(WRONG_FORMAT, "not a KafkaRiverCanal message: none of 'binlog', 'event', 'columns'")
    kind = req_str(doc, "event")
    op = _OPS.get(kind.strip().lower())
    if op is None:
        raise RejectError(UNSUPPORTED, f"unknown event {kind[:40]!r} (expected i, u or d)")
    binlog_file, offset = _binlog(req_str(doc, "binlog"))
    database = blank_to_none(req_str(doc, "db"))
    table = blank_to_none(req_str(doc, "table"))
    if table is None:
        raise RejectError(MISSING_FIELD, "required field 'table' is empty")
    columns = req(doc, "columns")
    if not isinstance(columns, list) or not columns:
        raise RejectError(BAD_FIELD, "field 'columns' must be a non-empty array of column objects")
    primary_key = str_list(doc.get("keys"), "keys")
    entries = [_entry(item, index) for index, item in enumerate(columns)]
    types = _row_types(entries, encoding, ctx.source_timezone)

    values: Image = {}
    for name, _type, entry in entries:
        values[name] = _value(types, name, entry)
    before: Image | None = None
    after: Image | None = None
    changed: list[str] | None = None
    if op == "INSERT":
        after = values
        require_key_columns(primary_key, after, "new row")
    elif op == "DELETE":
        before = values
        require_key_columns(primary_key, before, "deleted row")
    else:
        after = values
        require_key_columns(primary_key, after, "new row")
        before = {}
        changed = []
        for name, _type, entry in entries:
            updated = entry.get("updated")
            if updated is False:
                before[name] = values[name]
            elif updated is True:
                changed.append(name)
                _old_value(types, name, entry, before)
            elif updated is not None:
                raise RejectError(BAD_FIELD, f"column {name!r}: 'updated' must be a boolean")
    source = Source(
        format=FORMAT_ID,
        db_type="MYSQL",
        database=database,
        schema=None,
        table=table,
        binlog_file=binlog_file,
        binlog_pos=offset,
    )
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=order_key(binlog_index(binlog_file), offset, 0),
        ts_ms=_epoch_ms(doc, "time"),
        ingest_ts_ms=_epoch_ms(doc, "canalTime"),
        primary_key=primary_key,
        columns=_columns(types, entries, after, before),
        before=before,
        after=after,
        changed_columns=changed,
        ddl=None,
        origin=origin(ctx, 0),
    )
    return Parsed([event])


def _binlog(text: str) -> tuple[str, int]:
    """``offset@binlog-file`` -> (file, offset)."""
    offset_text, at, file_name = text.strip().partition("@")
    if not at or not file_name or not (offset_text.isascii() and offset_text.isdigit()):
        raise RejectError(BAD_FIELD, f"field 'binlog' must be offset@binlog-file, got {text[:80]!r}")
    offset = int(offset_text)
    if offset > INT64_MAX:
        raise RejectError(BAD_FIELD, f"binlog offset {offset_text[:30]} is beyond the 64-bit range")
    return file_name, offset


def _epoch_ms(doc: dict[str, Any], key: str) -> int | None:
    """An epoch-milliseconds field; a value outside int64 is no time at all."""
    value = opt_int(doc, key)
    if value is not None and not INT64_MIN <= value <= INT64_MAX:
        raise RejectError(BAD_FIELD, f"field {key!r} is outside the 64-bit millisecond range")
    return value


def _entry(item: Any, index: int) -> tuple[str, str | None, dict[str, Any]]:
    if not isinstance(item, dict):
        raise RejectError(BAD_FIELD, f"columns[{index}] must be a JSON object")
    name = item.get("n")
    if not isinstance(name, str) or not name:
        raise RejectError(MISSING_FIELD if name is None else BAD_FIELD, f"columns[{index}] has no column name 'n'")
    type_text = item.get("t")
    if type_text is not None and not isinstance(type_text, str):
        raise RejectError(BAD_FIELD, f"column {name!r}: type 't' must be a string")
    null = item.get("null")
    if null is not None and not isinstance(null, bool):
        raise RejectError(BAD_FIELD, f"column {name!r}: 'null' must be a boolean")
    return name, blank_to_none(type_text), item


def _row_types(
    entries: list[tuple[str, str | None, dict[str, Any]]], encoding: BytesEncoding, zone: _dt.tzinfo
) -> RowTypes:
    seen: set[str] = set()
    for name, _, _ in entries:
        if name in seen:
            raise RejectError(INCONSISTENT, f"column {name!r} appears twice in 'columns'")
        seen.add(name)
    # Columns without ``t`` stay undeclared so their type is inferred from the value.
    texts = [(name, type_text) for name, type_text, _ in entries if type_text is not None]
    key = (encoding, zone, *texts)
    cached = _TYPE_CACHE.get(key)
    if cached is None:
        cached = RowTypes.from_texts(texts, "mysql", encoding, zone)
        if len(_TYPE_CACHE) >= _TYPE_CACHE_LIMIT:
            _TYPE_CACHE.clear()
        _TYPE_CACHE[key] = cached
    return cached


def _columns(
    types: RowTypes, entries: list[tuple[str, str | None, dict[str, Any]]], after: Image | None, before: Image | None
) -> list[Column]:
    """Declared and inferred column descriptors, in the message's column order."""
    columns = types.columns_for(after, before)
    if len(columns) == len(types.columns):
        return columns
    by_name = {column.name: column for column in columns}
    return [by_name[name] for name, _, _ in entries if name in by_name]


def _convert(types: RowTypes, name: str, raw: Any, what: str) -> Value:
    convert = types.converters.get(name, infer)
    try:
        return convert(raw)
    except _CONVERSION_ERRORS as exc:
        type_text = types.types[name].text if name in types.types else None
        problem = value_problem(exc, raw)  # never the value itself: reasons carry no row data
        raise RejectError(BAD_VALUE, f"column {name!r} {what} ({type_text or 'untyped'}): {problem}") from None


def _value(types: RowTypes, name: str, entry: dict[str, Any]) -> Value:
    if entry.get("null") is True:
        return None
    if "v" not in entry:
        raise RejectError(MISSING_FIELD, f"column {name!r} has no value 'v' and is not marked null")
    raw = entry["v"]
    if raw is None:
        if entry.get("null") is False:
            raise RejectError(INCONSISTENT, f"column {name!r} has a null 'v' but 'null' is false")
        return None
    return _convert(types, name, raw, "value 'v'")


def _old_value(types: RowTypes, name: str, entry: dict[str, Any], before: Image) -> None:
    """Put an updated column's prior value into ``before`` where it is known."""
    if "origin_val" not in entry:
        return  # updated, old value not given: unknown
    raw = entry["origin_val"]
    if raw is None:
        before[name] = None
        return
    try:
        before[name] = _convert(types, name, raw, "old value 'origin_val'")
    except RejectError:
        if raw != "":
            raise
        # An empty old value the type cannot read: most likely a NULL Canal
        # rendered as "", but nothing says so; leave it unknown.
        return
