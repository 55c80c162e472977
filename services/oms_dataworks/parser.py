"""``oms-dataworks``: OceanBase OMS "DataWorks 2.0" JSON.

One message is one row change (or one DDL, heartbeat or transaction marker)::

    {"version": "2.0",
     "schema": {"source": {"dbType", "dbVersion", "dbName", "schema", "table"},
                "column": [{"name", "type"}], "pk": [...]},
     "payload": {"before": {"data": {...}} | null, "after": {"data": {...}} | null,
                 "op": "INSERT" | "UPDATE" | "DELETE" | "HEARTBEAT" | "ALTER" | ...,
                 "timestamp": {"eventTime": ms, "systemTime": ms, "checkpointTime": s},
                 "ddl": {"text": ...} | null, "scn": "<auto-increment id>" | "null"},
     "extend": {...}}

``op`` is case sensitive (the vendor says so): ``insert`` is not an op. Column
types are OMS's type words (``INT64`` signed 64-bit, ``BIGINT`` beyond 64 bits,
``ZONED_DATETIME``, ``TIMESTAMP`` as epoch-second text, ``BLOB`` in base64), read
with the ``oms`` dialect. Two OMS renderings go beyond the shared converters: a
DATETIME may carry a trailing zone id (``2020-11-25 00:01:02 Asia/Shanghai``;
a MySQL DATETIME is a wall clock, so the zone is dropped and the wall clock
kept), and an invalid DATE/DATETIME (``2020-02-30``) is passed through as its
original text, kept as ``Unparsed``. A numeric DATETIME (the format template's
``1590315269000.123456789``, contradicted by every real sample) has no defined
unit or zone and is rejected rather than guessed.

``payload.scn`` (OMS: an auto-increment id; the text ``"null"`` when absent)
goes to ``source.scn`` verbatim, ``checkpointTime`` (s) to ``source.checkpoint``;
``ts_ms`` is ``eventTime``, ``ingest_ts_ms`` is ``systemTime``. An OceanBase
``dbName`` of the form ``tenant.database`` is split into tenant and database.

Order key: the input's Kafka order: major = input partition, minor = input
offset, row 0 (a DataWorks message holds one row). ``payload.scn`` (OMS: an
auto-increment id) is the text ``"null"`` in every published sample, DDL
included, and ``eventTime`` is the change time, which is not monotonic across
transactions (one that started earlier can commit later). Before this release
the key was ``scn`` when numeric, else ``eventTime`` * 10^5: changes of a row
in one millisecond tied, and the two kinds of key compared on unrelated
scales. OMS writes a partition in its own delivery order, so Kafka order is
the source order within one input partition; keys of different partitions do
not compare. OMS's Kafka partition rules "Hash" (by primary key value),
"Table" and "One" each keep a row's changes in one partition; "Table" and
"One" also keep a TRUNCATE or table-dropping DDL with the rows it applies to.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import re
from collections.abc import Callable
from typing import Any, Final

from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import Image, Unparsed, Value
from binlake.shared.parsing import temporal
from binlake.shared.parsing.common import blank_to_none, ddl_event, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    INCONSISTENT,
    MISSING_FIELD,
    UNSUPPORTED,
    WRONG_FORMAT,
    RejectError,
)
from binlake.shared.parsing.jsondoc import (
    decode_and_parse,
    obj,
    opt_int,
    opt_list,
    opt_obj,
    opt_str,
    req,
    req_str,
    str_list,
)
from binlake.shared.parsing.order import kafka_order_key
from binlake.shared.parsing.result import Heartbeat, Parsed
from binlake.shared.parsing.rows import RowTypes, require_key_columns
from binlake.shared.parsing.sqltypes import SqlType, sql_type

FORMAT_ID: Final = "oms-dataworks"
PARSER_VERSION: Final = "1"

_ROW_OPS: Final[dict[str, Op]] = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE"}
_DDL_OPS: Final = frozenset({"CREATE", "ALTER", "ERASE", "QUERY", "TRUNCATE", "RENAME", "CINDEX", "DINDEX"})
_CONTROL_OPS: Final = {
    "TRANSACTION_BEGIN": "transaction_begin",
    "TRANSACTION_END": "transaction_end",
    "GTID": "gtid",
    "XACOMMIT": "xa_commit",
    "XAROLLBACK": "xa_rollback",
}

_TYPE_CACHE: dict[tuple[Any, ...], RowTypes] = {}
_TYPE_CACHE_LIMIT: Final = 4096

_DATE_SHAPE: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME_SHAPE: Final = re.compile(
    r"(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?)(?:\s+[A-Za-z][A-Za-z0-9_+\-/]*)?"
)


# ------------------------------------------------------------- column types


def _oms_date(fallback: Callable[[Any], Value]) -> Callable[[Any], Value]:
    def convert(value: Any) -> Value:
        if isinstance(value, str) and _DATE_SHAPE.fullmatch(value.strip()):
            try:
                return temporal.parse_date(value.strip())
            except ValueError:
                return Unparsed(value)  # OMS passes an invalid date through as its original text
        return fallback(value)

    return convert


def _oms_datetime(fallback: Callable[[Any], Value]) -> Callable[[Any], Value]:
    def convert(value: Any) -> Value:
        if isinstance(value, str):
            m = _DATETIME_SHAPE.fullmatch(value.strip())
            if m is not None:
                try:
                    return temporal.parse_local_datetime(m.group(1))  # the wall clock; a zone id is dropped
                except ValueError:
                    return Unparsed(value)
        return fallback(value)

    return convert


def column_type(text: str | None, zone: _dt.tzinfo) -> SqlType:
    t = sql_type(text, "oms", "base64", zone)
    if t.logical == "date":
        return dataclasses.replace(t, convert=_oms_date(t.convert))
    if t.logical == "datetime":
        return dataclasses.replace(t, convert=_oms_datetime(t.convert))
    return t


def _row_types(columns: list[Any] | None, zone: _dt.tzinfo) -> RowTypes:
    names: list[str] = []
    texts: list[str | None] = []
    for index, item in enumerate(columns or []):
        if not isinstance(item, dict):
            raise RejectError(BAD_FIELD, f"schema.column[{index}] must be an object {{name, type}}")
        name = item.get("name")
        text = item.get("type")
        if not isinstance(name, str) or not name:
            raise RejectError(BAD_FIELD, f"schema.column[{index}].name must be a non-empty string")
        if text is not None and not isinstance(text, str):
            raise RejectError(BAD_FIELD, f"schema.column[{index}].type of column {name!r} must be a string")
        names.append(name)
        texts.append(text)
    key = (zone, tuple(names), tuple(texts))
    cached = _TYPE_CACHE.get(key)
    if cached is not None:
        return cached
    types = RowTypes((name, column_type(text, zone)) for name, text in zip(names, texts, strict=True))
    if len(_TYPE_CACHE) >= _TYPE_CACHE_LIMIT:
        _TYPE_CACHE.clear()
    _TYPE_CACHE[key] = types
    return types


# ------------------------------------------------------------------ envelope


def _raw_image(payload: dict[str, Any], key: str) -> Any:
    """``payload.<key>.data`` or None when the image is absent."""
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise RejectError(BAD_FIELD, f"payload.{key} must be an object {{data}} or null")
    return value.get("data")


def _source(doc: dict[str, Any], payload: dict[str, Any], checkpoint: int | None) -> Source:
    schema = opt_obj(doc, "schema") or {}
    src = opt_obj(schema, "source") or {}
    db_type = blank_to_none(opt_str(src, "dbType"))
    db_type = db_type.upper() if db_type else None
    database = blank_to_none(opt_str(src, "dbName"))
    tenant = None
    if database and db_type and db_type.startswith("OB_") and "." in database:
        tenant, database = database.split(".", 1)  # OceanBase "tenant.database"
    scn = opt_str(payload, "scn")
    return Source(
        format=FORMAT_ID,
        db_type=db_type,
        database=database,
        schema=blank_to_none(opt_str(src, "schema")),
        table=blank_to_none(opt_str(src, "table")),
        tenant=tenant,
        scn=None if scn in (None, "", "null") else scn,
        checkpoint=None if checkpoint is None else str(checkpoint),
    )


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: _parse_doc(doc, ctx), numbers_are_values=True)


def _parse_doc(doc: Any, ctx: ParseContext) -> Parsed:
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (an OMS DataWorks message)")
    if "version" not in doc:
        raise RejectError(WRONG_FORMAT, "no 'version' field: not an OMS DataWorks 2.0 message")
    version = doc["version"]
    if not isinstance(version, str):
        raise RejectError(BAD_FIELD, "field 'version' must be a string such as \"2.0\"")
    if version != "2.0":
        raise RejectError(UNSUPPORTED, f'DataWorks protocol version {version[:20]!r}; only "2.0" is supported')
    payload = obj(req(doc, "payload"), "field 'payload'")
    op_text = req_str(payload, "op")
    stamps = opt_obj(payload, "timestamp") or {}
    event_ms = opt_int(stamps, "eventTime")
    system_ms = opt_int(stamps, "systemTime")
    source = _source(doc, payload, opt_int(stamps, "checkpointTime"))

    if op_text == "HEARTBEAT":
        if event_ms is None:
            raise RejectError(MISSING_FIELD, "HEARTBEAT message has no payload.timestamp.eventTime")
        table = f"{source.database}.{source.table}" if source.database and source.table else None
        return Parsed([], heartbeats=[Heartbeat(event_ms, table)], control="heartbeat")
    control = _CONTROL_OPS.get(op_text)
    if control is not None:
        return Parsed([], control=control)

    if op_text in _DDL_OPS:
        ddl = opt_obj(payload, "ddl") or {}
        sql = opt_str(ddl, "text")
        if not sql:
            raise RejectError(MISSING_FIELD, f"{op_text} message has no DDL text in payload.ddl.text")
        event = ddl_event(
            source,
            sql=sql,
            vendor_type=op_text,
            order_key=kafka_order_key(ctx),
            ts_ms=event_ms,
            ingest_ts_ms=system_ms,
            ctx=ctx,
        )
        return Parsed([event])

    op = _ROW_OPS.get(op_text)
    if op is None:
        raise RejectError(
            UNSUPPORTED,
            f"unknown op {op_text[:40]!r} (ops are case sensitive: INSERT, UPDATE, DELETE, HEARTBEAT, DDL types...)",
        )
    if source.table is None:
        raise RejectError(MISSING_FIELD, "required field schema.source.table is missing or empty")
    schema = opt_obj(doc, "schema") or {}
    types = _row_types(opt_list(schema, "column"), ctx.source_timezone)
    primary_key = str_list(schema.get("pk"), "schema.pk")
    raw_before = _raw_image(payload, "before")
    raw_after = _raw_image(payload, "after")
    before: Image | None = None
    after: Image | None = None
    if op == "DELETE":
        if raw_before is None:
            raise RejectError(MISSING_FIELD, "DELETE message has no payload.before.data")
        if raw_after is not None:
            raise RejectError(INCONSISTENT, "DELETE message carries an after image")
        before = types.convert(raw_before, "payload.before.data")
        require_key_columns(primary_key, before, "deleted row")
    else:
        if raw_after is None:
            raise RejectError(MISSING_FIELD, f"{op} message has no payload.after.data")
        if op == "INSERT" and raw_before is not None:
            raise RejectError(INCONSISTENT, "INSERT message carries a before image")
        after = types.convert(raw_after, "payload.after.data")
        if raw_before is not None:
            before = types.convert(raw_before, "payload.before.data")
            require_key_columns(primary_key, before, "prior row")
        else:
            require_key_columns(primary_key, after, "new row")
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=kafka_order_key(ctx),
        ts_ms=event_ms,
        ingest_ts_ms=system_ms,
        primary_key=primary_key,
        columns=types.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=None,
        ddl=None,
        origin=origin(ctx),
    )
    return Parsed([event])
