"""``oms-default`` and ``oms-extend-column-type``: OceanBase OMS "Default" JSON.

One message is one row (or one DDL, or a heartbeat)::

    {"allMetaData": {"checkpoint", "record_primary_key": "id1\\u0001id2",
                     "record_primary_value", "source_identity", "dbType",
                     "storeDataSequence", "table_name", "db": "tenant.database",
                     "timestamp": "<epoch seconds>", "uniqueId", "ddlType"},
     "prevStruct": {col: value} | null, "postStruct": {col: value} | null,
     "recordType": "INSERT" | "UPDATE" | "DELETE" | "HEARTBEAT" | "DDL"}

Default sends no column types: every column is inferred from its JSON value
(numbers exact: a fractional number becomes a Decimal with the digits as sent,
an integer beyond int64 a BigInt; strings such as ``2020-11-25`` stay strings,
since nothing says they are dates). DefaultExtendColumnType adds
``__light_type`` to each image (see ``types.py``), which types the columns it
names; it is never a column itself. A Default topic that receives an image with
``__light_type`` is misconfigured and rejects it as wrong_format.

``db`` is ``tenant.database`` for OceanBase db types and is split into tenant
and database; for Oracle-mode and DB2 db types the name is the schema
(``source.schema``, database left null). ``storeDataSequence`` is kept verbatim
in ``source.sequence``, ``uniqueId`` is the transaction id, ``checkpoint`` the
checkpoint. An UPDATE carries the full prior and new rows; OMS does not say
which columns changed, so ``changed_columns`` is null.

Order key: the input's Kafka order: major = input partition, minor = input
offset, row 0 (one row per message). OMS gives no log position on every
message: ``storeDataSequence`` is a time in ms * 10^5 + a counter, ordered
within one sync process only, present only in incremental messages with
sequenceEnabled=true (absent in the seed's samples, null on DDL, absent in
full load), and ``timestamp`` is the change time in seconds. Before this
release the key was ``storeDataSequence``, else ``timestamp`` * 10^8, else 0:
changes of a row within one second tied, a later transaction could sort
before an earlier one, and messages with and without the sequence compared on
different scales. OMS writes a partition in its own sequence order, so Kafka
order holds what the sequence held. Keys compare only within one input
partition: OMS's Kafka partition rules "Hash" (by primary key value), "Table"
and "One" each keep a row's changes in one partition; "Table" and "One" also
keep a TRUNCATE or table-dropping DDL with the rows it applies to.
"""

from __future__ import annotations

from typing import Any, Final

from binlake.services.oms_default.types import LIGHT_TYPE, row_types, split_image
from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.parsing.common import blank_to_none, ddl_event, epoch_ms, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_FIELD, MISSING_FIELD, UNSUPPORTED, WRONG_FORMAT, RejectError
from binlake.shared.parsing.jsondoc import decode_and_parse, obj, opt_int, opt_str
from binlake.shared.parsing.order import kafka_order_key
from binlake.shared.parsing.result import Heartbeat, Parsed
from binlake.shared.parsing.rows import UNTYPED, require_key_columns

FORMAT_ID: Final = "oms-default"
FORMAT_ID_EXTEND: Final = "oms-extend-column-type"
PARSER_VERSION: Final = "1"

KEY_SEPARATOR: Final = "\u0001"

_ROW_OPS: Final[dict[str, Op]] = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE"}
_OCEANBASE: Final = frozenset({"OCEANBASE", "OB_MYSQL", "OB_ORACLE", "OB_IN_ORACLE_MODE"})
_ORACLE_MODE: Final = frozenset({"ORACLE", "OB_ORACLE", "OB_IN_ORACLE_MODE"})
_SCHEMA_NAMED: Final = _ORACLE_MODE | {"DB2", "DB2_LUW"}


def parse_default(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: _parse(doc, ctx, FORMAT_ID, extend=False), numbers_are_values=True)


def parse_extend_column_type(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: _parse(doc, ctx, FORMAT_ID_EXTEND, extend=True), numbers_are_values=True)


def _names(db: str | None, db_type: str | None) -> tuple[str | None, str | None, str | None]:
    """(tenant, database, schema) from ``db``."""
    tenant = None
    if db is not None and db_type in _OCEANBASE and "." in db:
        head, _, db = db.partition(".")
        tenant = blank_to_none(head)
        db = blank_to_none(db)
    if db_type in _SCHEMA_NAMED:
        return tenant, None, db
    return tenant, db, None


def _digits(text: str | None) -> int | None:
    if text is not None and text.isascii() and text.isdigit():
        return int(text)
    return None


def _primary_key(meta: dict[str, Any]) -> list[str]:
    text = opt_str(meta, "record_primary_key")
    if not text:
        return []
    names = text.split(KEY_SEPARATOR)
    if any(not name for name in names):
        raise RejectError(BAD_FIELD, f"record_primary_key {text[:120]!r} has an empty column name")
    return names


def _parse(doc: Any, ctx: ParseContext, format_id: str, *, extend: bool) -> Parsed:
    if not isinstance(doc, dict) or ("recordType" not in doc and "allMetaData" not in doc):
        raise RejectError(WRONG_FORMAT, "expected a JSON object with 'recordType' and 'allMetaData' (OMS Default)")
    kind = doc.get("recordType")
    if kind is None:
        raise RejectError(MISSING_FIELD, "required field 'recordType' is missing or null")
    if not isinstance(kind, str):
        raise RejectError(BAD_FIELD, "field 'recordType' must be a string")
    raw_meta = doc.get("allMetaData")
    if raw_meta is None:
        raise RejectError(MISSING_FIELD, "required field 'allMetaData' is missing or null")
    meta = obj(raw_meta, "field 'allMetaData'")
    kind = kind.upper()

    db_type = blank_to_none((opt_str(meta, "dbType") or "").strip().upper())
    db = blank_to_none(opt_str(meta, "db"))
    table = blank_to_none(opt_str(meta, "table_name"))
    tenant, database, schema = _names(db, db_type)
    seconds = opt_int(meta, "timestamp")
    ts_ms = None if seconds is None else epoch_ms(seconds)
    sequence = blank_to_none(opt_str(meta, "storeDataSequence"))
    source = Source(
        format=format_id,
        db_type=db_type,
        database=database,
        schema=schema,
        table=table,
        tenant=tenant,
        checkpoint=blank_to_none(opt_str(meta, "checkpoint")),
        transaction_id=blank_to_none(opt_str(meta, "uniqueId")),
        sequence=sequence,
    )

    if kind == "HEARTBEAT":
        return _heartbeat(ts_ms, meta, database or schema, table)
    key = kafka_order_key(ctx)

    prev, prev_types = split_image(doc.get("prevStruct"), "prevStruct")
    post, post_types = split_image(doc.get("postStruct"), "postStruct")
    if not extend and (prev_types or post_types or _has_light_type(doc)):
        raise RejectError(
            WRONG_FORMAT, f"image carries {LIGHT_TYPE!r}: this is oms-extend-column-type, not oms-default"
        )

    if kind == "DDL":
        sql = (post or {}).get("ddl")
        if not isinstance(sql, str) or not sql.strip():
            raise RejectError(MISSING_FIELD, "DDL message has no 'ddl' statement text in postStruct")
        event = ddl_event(
            source,
            sql=sql,
            vendor_type=blank_to_none(opt_str(meta, "ddlType")),
            order_key=key,
            ts_ms=ts_ms,
            ingest_ts_ms=None,
            ctx=ctx,
        )
        return Parsed([event])

    op = _ROW_OPS.get(kind)
    if op is None:
        raise RejectError(
            UNSUPPORTED, f"unknown recordType {kind!r} (expected INSERT, UPDATE, DELETE, HEARTBEAT or DDL)"
        )
    if table is None:
        raise RejectError(MISSING_FIELD, "required field 'allMetaData.table_name' is missing or empty")
    if op != "DELETE" and not post:
        raise RejectError(MISSING_FIELD, f"{kind} message has no column values in 'postStruct'")
    if op != "INSERT" and not prev:
        raise RejectError(MISSING_FIELD, f"{kind} message has no column values in 'prevStruct'")

    types = UNTYPED
    if extend and (prev_types or post_types):
        declared = {**prev_types, **post_types}
        types = row_types(declared, (post, prev), ctx.source_timezone, db_type in _ORACLE_MODE)
    primary_key = _primary_key(meta)
    before = None if op == "INSERT" else types.convert(prev, "prevStruct")
    after = None if op == "DELETE" else types.convert(post, "postStruct")
    require_key_columns(primary_key, before, "prior (prevStruct)")
    require_key_columns(primary_key, after, "new (postStruct)")
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=key,
        ts_ms=ts_ms,
        ingest_ts_ms=None,
        primary_key=primary_key,
        columns=types.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=None,
        ddl=None,
        origin=origin(ctx),
    )
    return Parsed([event])


def _has_light_type(doc: dict[str, Any]) -> bool:
    images = (doc.get("prevStruct"), doc.get("postStruct"))
    return any(isinstance(image, dict) and LIGHT_TYPE in image for image in images)


def _heartbeat(ts_ms: int | None, meta: dict[str, Any], database: str | None, table: str | None) -> Parsed:
    if ts_ms is None:
        # The incremental checkpoint is also a time in seconds; a full-load one is not.
        checkpoint = _digits(opt_str(meta, "checkpoint"))
        if checkpoint is None:
            raise RejectError(MISSING_FIELD, "HEARTBEAT message has no 'timestamp' (nor a numeric 'checkpoint')")
        ts_ms = epoch_ms(checkpoint)
    name = table if database is None or table is None else f"{database}.{table}"
    return Parsed([], heartbeats=[Heartbeat(ts_ms, name)], control="heartbeat")
