"""The Canal "flat message" shape, shared by every vendor that copies it.

Alibaba Canal, OceanBase OMS "Canal", Tencent CKafka's DDL messages and Huawei
DRS JSON / JSON-C all send::

    {"data": [row, ...], "old": [partial prior row, ...] | null,
     "database", "table", "type", "isDdl", "sql", "es", "ts",
     "mysqlType": {col: type text}, "sqlType": {col: JDBC code},
     "pkNames": [...], "id": ...}

and differ in details a ``FlatProfile`` captures: how binary values are
written, where a DELETE's row is, what orders messages, what the type words
mean. ``parse_flat`` does the rest once, for all of them.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import Image
from binlake.shared.parsing.binary import BytesEncoding
from binlake.shared.parsing.common import blank_to_none, ddl_event, epoch_ms, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_FIELD, MISSING_FIELD, UNSUPPORTED, WRONG_FORMAT, RejectError
from binlake.shared.parsing.jsondoc import opt_int, opt_list, opt_obj, opt_str, str_list
from binlake.shared.parsing.order import order_key
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.rows import RowTypes, overlay, require_key_columns
from binlake.shared.parsing.sqltypes import Dialect, jdbc_type_name

_ROW_OPS: Final[dict[str, Op]] = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT"}
_FLAT_KEYS: Final = frozenset({"data", "database", "table", "isDdl", "mysqlType", "sqlType", "pkNames", "es"})
_TYPE_CACHE: dict[tuple[Any, ...], RowTypes] = {}
_TYPE_CACHE_LIMIT: Final = 4096


@dataclass(slots=True, frozen=True)
class FlatProfile:
    format_id: str
    dialect: Dialect
    bytes_encoding: BytesEncoding
    delete_row_in: Literal["data", "old"]
    """Where a DELETE's row is: Canal and DRS JSON-C use ``data``, DRS JSON ``old``."""
    order: Callable[[dict[str, Any], ParseContext], tuple[int, int]]
    """(major, minor) of the order key from the message and where it was read."""
    db_type: str | None = "MYSQL"
    strip_names: bool = False
    """Strip trailing blanks from database and table names (MySQL forbids them)."""


def order_by_input(doc: dict[str, Any], ctx: ParseContext) -> tuple[int, int]:
    """Canal, OMS Canal, CKafka DDL: the input's Kafka order (partition, offset).

    A flat message carries no log position: ``es`` is the binlog event's time
    (one-second resolution in practice, and not monotonic across transactions)
    and Canal's ``id`` numbers a batch, shared by every flat message of it, so
    neither can order two changes of a row (docs/formats.md, ``canal-json``).
    """
    return ctx.partition, ctx.offset


def _row_types(doc: dict[str, Any], profile: FlatProfile, zone: _dt.tzinfo) -> RowTypes:
    mysql_type = opt_obj(doc, "mysqlType")
    # Names and type texts as two flat tuples: the same key as the (name, text)
    # pairs, hashed without a tuple per column (this runs for every message).
    if mysql_type:
        key: tuple[Any, ...] = (
            profile.dialect,
            profile.bytes_encoding,
            zone,
            tuple(mysql_type),
            tuple(mysql_type.values()),
        )
    else:
        sql_type = opt_obj(doc, "sqlType") or {}
        key = (profile.dialect, profile.bytes_encoding, zone, "jdbc", tuple(sql_type), tuple(sql_type.values()))
    try:
        cached = _TYPE_CACHE.get(key)
    except TypeError:  # an unhashable type entry (a list, an object): not a valid type map
        raise RejectError(BAD_FIELD, "mysqlType/sqlType values must be strings or numbers") from None
    if cached is not None:
        return cached
    if mysql_type:
        texts = [(name, _type_text(name, text)) for name, text in mysql_type.items()]
    else:
        texts = [(name, _jdbc_text(name, code)) for name, code in (opt_obj(doc, "sqlType") or {}).items()]
    types = RowTypes.from_texts(texts, profile.dialect, profile.bytes_encoding, zone)
    if len(_TYPE_CACHE) >= _TYPE_CACHE_LIMIT:
        _TYPE_CACHE.clear()
    _TYPE_CACHE[key] = types
    return types


def _type_text(name: str, text: Any) -> str | None:
    if text is None or isinstance(text, str):
        return text
    raise RejectError(BAD_FIELD, f"mysqlType of column {name!r} must be a string")


def _jdbc_text(name: str, code: Any) -> str | None:
    if code is None:
        return None
    if isinstance(code, bool) or not isinstance(code, int):
        raise RejectError(BAD_FIELD, f"sqlType of column {name!r} must be a JDBC type number")
    return jdbc_type_name(code)


def _name(doc: dict[str, Any], key: str, strip: bool) -> str | None:
    value = opt_str(doc, key)
    if value is not None and strip:
        value = value.rstrip()
    return blank_to_none(value)


def parse_flat(doc: Any, ctx: ParseContext, profile: FlatProfile) -> Parsed:
    """Canonical events from one flat message (already JSON-decoded)."""
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a Canal flat message)")
    kind = doc.get("type")
    if not isinstance(kind, str):
        if "type" not in doc:
            if not _FLAT_KEYS.intersection(doc):
                raise RejectError(WRONG_FORMAT, f"not a Canal flat message: none of {sorted(_FLAT_KEYS)} present")
            raise RejectError(MISSING_FIELD, "required field 'type' is missing")
        raise RejectError(BAD_FIELD, "field 'type' must be a string")
    is_ddl = doc.get("isDdl")
    es = opt_int(doc, "es")
    es_ms = None if es is None else epoch_ms(es)
    ts = opt_int(doc, "ts")
    ts_ms = None if ts is None else epoch_ms(ts)
    database = _name(doc, "database", profile.strip_names)
    table = _name(doc, "table", profile.strip_names)
    major, minor = profile.order(doc, ctx)
    source = Source(
        format=profile.format_id,
        db_type=profile.db_type,
        database=database,
        schema=None,
        table=table,
        gtid=blank_to_none(opt_str(doc, "gtid")),
        sequence=opt_str(doc, "id"),
    )
    op = _ROW_OPS.get(kind.upper())
    if is_ddl is True or (op is None and is_ddl is None and doc.get("sql")):
        sql = opt_str(doc, "sql")
        if not sql:
            raise RejectError(MISSING_FIELD, f"DDL message of type {kind!r} has no 'sql' text")
        event = ddl_event(
            source,
            sql=sql,
            vendor_type=kind,
            order_key=order_key(major, minor, 0),
            ts_ms=es_ms,
            ingest_ts_ms=ts_ms,
            ctx=ctx,
        )
        return Parsed([event])
    if op is None:
        raise RejectError(UNSUPPORTED, f"unknown change type {kind!r} (expected INSERT, UPDATE, DELETE, INIT or DDL)")
    if table is None:
        raise RejectError(MISSING_FIELD, "required field 'table' is missing or empty")
    rows = opt_list(doc, profile.delete_row_in if op == "DELETE" else "data")
    if not rows:
        where = profile.delete_row_in if op == "DELETE" else "data"
        raise RejectError(MISSING_FIELD, f"{kind} message has no rows in {where!r}")
    olds = opt_list(doc, "old") if op == "UPDATE" else None
    primary_key = str_list(doc.get("pkNames"), "pkNames")
    types = _row_types(doc, profile, ctx.source_timezone)
    events: list[ChangeEvent] = []
    for index, raw_row in enumerate(rows):
        before: Image | None = None
        after: Image | None = None
        changed: list[str] | None = None
        if op == "DELETE":
            before = types.convert(raw_row, f"{profile.delete_row_in}[{index}]")
            require_key_columns(primary_key, before, "deleted row")
        else:
            after = types.convert(raw_row, f"data[{index}]")
            require_key_columns(primary_key, after, "new row")
            if olds is not None and index < len(olds) and olds[index] is not None:
                old = types.convert(olds[index], f"old[{index}]")
                before = overlay(after, old)
                changed = list(old)
        events.append(
            ChangeEvent(
                op=op,
                source=source,
                order_key=order_key(major, minor, index),
                ts_ms=es_ms,
                ingest_ts_ms=ts_ms,
                primary_key=primary_key,
                columns=types.columns_for(after, before),
                before=before,
                after=after,
                changed_columns=changed,
                ddl=None,
                origin=origin(ctx, index),
            )
        )
    return Parsed(events)
