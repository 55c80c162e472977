"""``debezium-smt``: rows flattened by Debezium's ExtractNewRecordState SMT (OMS "DebeziumSmt").

A message is the new row state ``{col: value, ...}`` plus metadata fields whose
names start with ``__``: ``__deleted`` ("true"/"false" or a boolean, added by
``delete.handling.mode=rewrite``) and, when the SMT's ``add.fields`` asks for
them, ``__op``, ``__table``, ``__db``, ``__source_ts_ms``, ``__ts_ms``,
``__source_file``, ``__source_pos``, ``__source_gtid``, ``__source_connector``.
``__*`` fields are never columns (a real column named ``__x`` cannot be told
apart and is dropped as metadata). With ``schemas.enable`` the row comes as
``{"schema": {...}, "payload": {row}}`` and is typed from its Connect schema
(``services.debezium_json.connect``); else every column is inferred.

Ops: ``__deleted`` true -> DELETE whose ``before`` is the row (the SMT's
last state); otherwise ``__op`` c/u/r -> INSERT/UPDATE/SNAPSHOT, and without
``__op`` an insert cannot be told from an update -> UPSERT. An UPDATE has no
``before`` (the SMT drops it). A null/empty value is a tombstone (control).

Table: ``__db``/``__table`` when the message carries them, else the configured
``--source-table`` (``ctx.source_table``, "db.table"); neither -> CONFIG reject.
Primary key: option ``primary_key`` ("a,b"), else empty. Bytes with a schema are
base64 (JsonConverter); OMS writes hex: set option ``bytes_encoding=hex``.

Order key: the message holds no source position, so ordering is Kafka order:
major = partition, minor = offset. Events of one table are ordered only
within one partition.
"""

from __future__ import annotations

from typing import Any, Final

from binlake.services.debezium_json import connect, envelope
from binlake.services.debezium_json.parser import bytes_encoding_option, primary_key_option
from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import Image
from binlake.shared.parsing.common import blank_to_none, epoch_ms, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    CONFIG,
    INCONSISTENT,
    MISSING_FIELD,
    UNSUPPORTED,
    WRONG_FORMAT,
    RejectError,
)
from binlake.shared.parsing.jsondoc import InexactNumber, decode_and_parse, decode_exact, opt_int, opt_str
from binlake.shared.parsing.order import order_key
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.rows import UNTYPED, require_key_columns

FORMAT_ID: Final = "debezium-smt"
PARSER_VERSION: Final = "1"

_OPS: Final[dict[str, Op]] = {"c": "INSERT", "u": "UPDATE", "r": "SNAPSHOT", "d": "DELETE"}
_TOMBSTONE: Final = "tombstone"

# Signatures of whole messages of other formats, which are not flattened rows.
_OTHER_FORMATS: Final = (
    (frozenset({"op", "source", "after"}), "a Debezium change event (use debezium-json)"),
    (frozenset({"op", "source", "before"}), "a Debezium change event (use debezium-json)"),
    (frozenset({"data", "isDdl", "type"}), "a Canal flat message"),
    (frozenset({"database", "table", "type", "data", "ts"}), "a Maxwell message"),
    (frozenset({"allMetaData"}), "an OceanBase OMS Default message"),
    (frozenset({"op_type", "table"}), "an Oracle GoldenGate message"),
)


def is_column(name: str) -> bool:
    """``__*`` fields are the SMT's metadata, never columns."""
    return not name.startswith("__")


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    if not raw.strip():
        return Parsed([], control=_TOMBSTONE)
    # A Kafka Connect envelope whose schema was read before: its payload alone is decoded, beside the
    # schema object (debezium-json's envelope shortcut; the document is the one the full decode gives).
    doc = envelope.fast_document(raw)
    if doc is None:
        return decode_and_parse(raw, lambda doc: _parse_whole(raw, doc, ctx))
    try:
        return parse_document(doc, ctx)
    except InexactNumber:
        return parse_document(decode_exact(raw), ctx)  # as decode_and_parse redoes it


def _parse_whole(raw: bytes, doc: Any, ctx: ParseContext) -> Parsed:
    """A message decoded whole; an envelope's schema is remembered for the next message's shortcut."""
    if isinstance(doc, dict) and isinstance(doc.get("schema"), dict):
        envelope.remember(raw, doc["schema"])
    return parse_document(doc, ctx)


def parse_document(doc: Any, ctx: ParseContext) -> Parsed:
    if doc is None:
        return Parsed([], control=_TOMBSTONE)
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a row flattened by ExtractNewRecordState)")
    types = UNTYPED
    row = doc
    if set(doc) == {"schema", "payload"} and isinstance(doc["schema"], dict):
        payload = doc["payload"]
        if payload is None:
            return Parsed([], control=_TOMBSTONE)
        if not isinstance(payload, dict):
            raise RejectError(BAD_FIELD, "field 'payload' must be a JSON object or null")
        fields = connect.struct_fields(doc["schema"], "schema")
        types = connect.row_types(fields, bytes_encoding_option(ctx, "base64"), is_column)
        row = payload
    for keys, what in _OTHER_FORMATS:
        if keys <= row.keys():
            raise RejectError(WRONG_FORMAT, f"this is {what}, not a flattened row")
    meta = {name: value for name, value in row.items() if not is_column(name)}
    values = {name: value for name, value in row.items() if is_column(name)}
    if not values:
        raise RejectError(MISSING_FIELD, "the message holds no column values (only '__' metadata fields)")
    op = _op(meta)
    source = _source(meta, ctx)
    image: Image = types.convert(values, "row")
    primary_key = primary_key_option(ctx)
    require_key_columns(primary_key, image, "deleted row" if op == "DELETE" else "new row")
    source_ts = opt_int(meta, "__source_ts_ms")
    ingest_ts = opt_int(meta, "__ts_ms")
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=order_key(ctx.partition, ctx.offset, 0),
        ts_ms=epoch_ms(source_ts) if source_ts else None,
        ingest_ts_ms=None if ingest_ts is None else epoch_ms(ingest_ts),
        primary_key=primary_key,
        columns=types.columns_for(image),
        before=image if op == "DELETE" else None,
        after=None if op == "DELETE" else image,
        changed_columns=None,
        ddl=None,
        origin=origin(ctx),
    )
    return Parsed([event])


def _deleted(meta: dict[str, Any]) -> bool | None:
    value = meta.get("__deleted")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise RejectError(BAD_FIELD, f'field \'__deleted\' must be "true", "false" or a boolean, got {value!r:.60}')


def _op(meta: dict[str, Any]) -> Op:
    deleted = _deleted(meta)
    kind = meta.get("__op")
    op = None
    if kind is not None:
        if not isinstance(kind, str):
            raise RejectError(BAD_FIELD, "field '__op' must be a string (c, u, d or r)")
        op = _OPS.get(kind)
        if op is None:
            raise RejectError(UNSUPPORTED, f"unknown '__op' {kind!r} (expected c, u, d or r)")
    if deleted:
        if op not in (None, "DELETE"):
            raise RejectError(INCONSISTENT, f"'__deleted' is true but '__op' is {kind!r}")
        return "DELETE"
    if op == "DELETE" and deleted is False:
        raise RejectError(INCONSISTENT, "'__op' is 'd' but '__deleted' is false")
    return op or "UPSERT"


def _source(meta: dict[str, Any], ctx: ParseContext) -> Source:
    table = blank_to_none(opt_str(meta, "__table"))
    database = blank_to_none(opt_str(meta, "__db"))
    if table is None:
        if not ctx.source_table:
            raise RejectError(
                CONFIG,
                "the message names no table: configure --source-table DB.TABLE (or a topic mapping) for this topic",
            )
        configured_db, _, table = ctx.source_table.rpartition(".")
        database = database or configured_db or None
    connector = blank_to_none(opt_str(meta, "__source_connector"))
    db_type = connector or ctx.options.get("db_type")
    return Source(
        format=FORMAT_ID,
        db_type=db_type.upper() if isinstance(db_type, str) and db_type else None,
        database=database,
        schema=blank_to_none(opt_str(meta, "__schema")),
        table=table,
        binlog_file=blank_to_none(opt_str(meta, "__source_file")),
        binlog_pos=opt_int(meta, "__source_pos"),
        gtid=blank_to_none(opt_str(meta, "__source_gtid")),
    )
