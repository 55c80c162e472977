"""``debezium-json``: Debezium change events as JSON, standard and OceanBase OMS flavours.

Accepted shapes (one change per message):

- ``{"schema": {...}, "payload": {...}}`` (JsonConverter with ``schemas.enable``)
  and ``{"payload": {...}}``; ``{... "payload": null}``, the JSON ``null`` and an
  empty value are Kafka tombstones (control ``tombstone``, no event);
- the bare payload ``{"op", "source", "before", "after", "ts_ms", "transaction"}``
  (standard connectors without schemas, and OMS "DebeziumFlatten");
- Debezium's schema-change events ``{"ddl", "databaseName", "tableChanges"...}``
  (DDL events), transaction markers ``{"status": "BEGIN"|"END", "id"}`` and
  heartbeats ``{"ts_ms"}`` (controls, no event).

Ops: ``c`` INSERT, ``u`` UPDATE, ``d`` DELETE, ``r`` SNAPSHOT; ``t`` TRUNCATE
(Debezium sends no statement, so the event carries an empty ``ddl.sql`` and kind
TRUNCATE_TABLE, the convention for every vendor without SQL); ``m`` (logical decoding message) is control ``message``;
OMS ``HEARTBEAT`` is a heartbeat. Debezium gives no changed-column list, so
``changed_columns`` is None; an INSERT's ``before`` is ignored (OMS's template
fills both images).

Types: with a schema, each column is typed from its Connect field schema (see
``connect``). Without one, types are inferred from the JSON values
(``inferred=True``); for OMS (``source.name`` "OMS" or connector ``OB_*``) a JSON
number with a fraction is a FLOAT/DOUBLE (OMS sends DECIMAL as a string), so it
is read as float64 rather than as an exact decimal. Every other OMS rendering
(LONG dates, times, DATETIME milliseconds, hex bytes) is indistinguishable from
an integer or a string by its shape and stays one. Bytes are base64 for
standard Debezium and hex (base16) for OMS; option ``bytes_encoding`` overrides.

Primary key: Debezium puts the key in the Kafka record key, which the parser
does not see, so ``primary_key`` is empty unless option ``primary_key``
("a,b") names it; then the identifying image must hold those columns.

Order key: one key space per stream, chosen by ``source.connector`` (which
Debezium writes on every message, the same for all of a connector's topics)
and option ``order``, never by which position fields one message carries:

- ``mysql`` and ``mariadb`` (Debezium's own MariaDB connector; MariaDB read
  by the MySQL connector says ``mysql``): the binlog position. major = binlog
  file index, minor = ``pos * 10**6 + row`` (``row`` orders the rows of one
  binlog event; snapshot rows share the snapshot's start position). A change
  or schema-change event without ``source.file`` or ``source.pos`` is a
  reject (``missing_field``);
- ``postgresql``: major = ``source.lsn``, minor 0; a change without ``lsn``
  is a reject;
- every other connector (sqlserver, oracle, db2, vitess...), OMS (``name``
  "OMS" or connector ``OB_*``, which has no log position on its messages) and
  messages without ``connector`` (early Debezium releases, whose source
  blocks had no such field; schema-change events without ``source``): the
  input's Kafka order, major = input partition, minor = input offset,
  whatever ``file`` or ``lsn`` they carry;
- option ``order=kafka``: the input's Kafka order for every connector (a way
  out for a stream whose messages lack the position, at the price of
  rebuilding the mirrors fed so far); ``order=position`` or unset: the rules
  above.

``source.file`` / ``pos`` still fill ``source.binlog_file`` / ``binlog_pos``
whatever the key space. OMS's ``source.pos`` is ``offset@seconds`` (a
checkpoint, masked in the published samples) and its ``source.ts_ms`` a
change time, which is not monotonic across transactions; before this release
OMS was keyed by (``source.ts_ms``, that offset) and the other connectors
without ``file`` or ``lsn`` by ``source.ts_ms``, so a row's changes in one
millisecond tied and a transaction that started earlier but committed later
sorted first; and a MySQL or PostgreSQL message was keyed by whichever of
``file`` and ``lsn`` it carried. Kafka-order keys compare only within one
input partition: Debezium keys records by primary key, so the default
partitioner keeps a row's changes in one partition (OMS's partition rules
"Hash", "Table" and "One" do too); a TRUNCATE orders only against rows of its
own partition.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final

from binlake.services.debezium_json import connect, envelope
from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import Image
from binlake.shared.parsing.binary import BYTES_ENCODINGS, BytesEncoding
from binlake.shared.parsing.common import blank_to_none, ddl_event, epoch_ms, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    CONFIG,
    MISSING_FIELD,
    UNSUPPORTED,
    WRONG_FORMAT,
    RejectError,
)
from binlake.shared.parsing.jsondoc import (
    InexactNumber,
    check_depth,
    decode_and_parse,
    decode_exact,
    opt_int,
    opt_obj,
    opt_str,
    req_str,
)
from binlake.shared.parsing.order import binlog_index, by_position, order_key
from binlake.shared.parsing.result import Heartbeat, Parsed
from binlake.shared.parsing.rows import UNTYPED, RowTypes, require_key_columns
from binlake.shared.parsing.sqltypes import SqlType

FORMAT_ID: Final = "debezium-json"
PARSER_VERSION: Final = "1"

_ROW_OPS: Final[dict[str, Op]] = {"c": "INSERT", "u": "UPDATE", "d": "DELETE", "r": "SNAPSHOT"}
_ROW_LIMIT: Final = 1_000_000
_FLOAT64: Final = SqlType(None, "float64", None, None, connect.FLOAT)
_TOMBSTONE: Final = "tombstone"
_BINLOG_CONNECTORS: Final = frozenset({"mysql", "mariadb"})
"""Connectors keyed by binlog position (``source.file``, ``pos``, ``row``)."""
_LSN_CONNECTORS: Final = frozenset({"postgresql"})
"""Connectors keyed by ``source.lsn``."""
_WAY_OUT: Final = "or set option order=kafka and rebuild the mirrors fed so far (keys of the two orders do not compare)"


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    if not raw.strip():
        return Parsed([], control=_TOMBSTONE)  # a Kafka tombstone (null value)
    split = envelope.split(raw)
    alone = envelope.payload_alone(split)  # a remembered schema: the payload decoded alone
    if alone is not None:
        check_depth(raw)  # the whole message's limit, as the full decode's (orjson alone reads 1,024 levels)
        known, payload_raw, payload = alone
        try:
            return _parse_enveloped(payload, known, ctx)
        except InexactNumber:
            try:
                exact = decode_exact(payload_raw)
            except RejectError:
                pass  # the full decode below words the error for the whole message
            else:
                return _parse_enveloped(exact, known, ctx)

    def parse_doc(doc: Any) -> Parsed:
        if split is None and isinstance(doc, dict) and isinstance(doc.get("schema"), dict):
            envelope.remember(raw, doc["schema"])  # so that the next message with this schema takes the shortcut
        return parse_document(doc, ctx)

    return decode_and_parse(raw, parse_doc)


def parse_document(doc: Any, ctx: ParseContext) -> Parsed:
    """Events from one decoded Debezium message."""
    if doc is None:
        return Parsed([], control=_TOMBSTONE)
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a Debezium change event)")
    if "payload" in doc:
        payload = doc["payload"]
        if payload is None:
            return Parsed([], control=_TOMBSTONE)
        if not isinstance(payload, dict):
            raise RejectError(BAD_FIELD, "field 'payload' must be a JSON object or null")
        schema = doc.get("schema")
        if schema is not None and not isinstance(schema, dict):
            raise RejectError(BAD_FIELD, "field 'schema' must be a JSON object or null")
        return _parse_payload(payload, schema, ctx, enveloped=True)
    return _parse_payload(doc, None, ctx, enveloped=False)


def _parse_enveloped(payload: Any, known: envelope.KnownSchema, ctx: ParseContext) -> Parsed:
    """``parse_document`` of ``{"schema": known.doc, "payload": payload}`` (see ``envelope``)."""
    if payload is None:
        return Parsed([], control=_TOMBSTONE)
    if not isinstance(payload, dict):
        raise RejectError(BAD_FIELD, "field 'payload' must be a JSON object or null")
    return _parse_payload(payload, known.doc, ctx, enveloped=True, known=known)


def primary_key_option(ctx: ParseContext) -> list[str]:
    """Key column names from option ``primary_key`` ("a,b" or a list of names)."""
    value = ctx.options.get("primary_key")
    if value is None or value == "":
        return []
    if isinstance(value, str):
        names = [name.strip() for name in value.split(",")]
    elif isinstance(value, list | tuple) and all(isinstance(name, str) for name in value):
        names = [name.strip() for name in value]
    else:
        raise RejectError(CONFIG, "option primary_key must be comma-separated column names")
    if not all(names):
        raise RejectError(CONFIG, f"option primary_key {value!r} has an empty column name")
    return names


def bytes_encoding_option(ctx: ParseContext, default: BytesEncoding) -> BytesEncoding:
    value = ctx.options.get("bytes_encoding")
    if value is None or value == "":
        return default
    for encoding in BYTES_ENCODINGS:
        if value == encoding:
            return encoding
    raise RejectError(CONFIG, f"option bytes_encoding {value!r} is not one of {', '.join(BYTES_ENCODINGS)}")


def _parse_payload(
    payload: dict[str, Any],
    schema: dict[str, Any] | None,
    ctx: ParseContext,
    enveloped: bool,
    known: envelope.KnownSchema | None = None,
) -> Parsed:
    if "op" not in payload:
        return _parse_non_change(payload, ctx, enveloped)
    kind = payload["op"]
    if not isinstance(kind, str):
        raise RejectError(BAD_FIELD, "field 'op' must be a string")
    if kind == "m":
        return Parsed([], control="message")
    source_doc = opt_obj(payload, "source")
    if kind.upper() == "HEARTBEAT":
        return _heartbeat(payload, source_doc)
    op = _ROW_OPS.get(kind)
    if op is None and kind != "t":
        raise RejectError(UNSUPPORTED, f"unknown op {kind!r} (expected c, u, d, r, t, m or HEARTBEAT)")
    if source_doc is None:
        raise RejectError(MISSING_FIELD, "required field 'source' is missing or null")
    oms = _is_oms(source_doc)
    source = _source(source_doc, payload, oms)
    if source.table is None:
        _table_from_context(source, ctx)
    ts_ms = _source_ts_ms(source_doc)
    ingest_ts_ms = opt_int(payload, "ts_ms")
    key = order_key(*_position(source_doc, oms, ctx), 0)
    if op is None:  # "t": the whole table was emptied
        return Parsed([_truncate(source, key, ts_ms, ingest_ts_ms, ctx)])
    encoding = bytes_encoding_option(ctx, "hex" if oms else "base64")
    before_raw = payload.get("before")
    after_raw = payload.get("after")
    types = known.row_types.get(encoding) if known is not None else None
    if types is None:
        types = _row_types(schema, encoding, oms, after_raw, before_raw)
        if known is not None and schema is not None and image_schema(schema) is not None:
            known.row_types[encoding] = types  # then the types depend on the schema alone
    primary_key = primary_key_option(ctx)
    before: Image | None = None
    after: Image | None = None
    if op == "DELETE":
        if before_raw is None:
            raise RejectError(MISSING_FIELD, "delete event (op 'd') has no 'before' image")
        before = types.convert(before_raw, "before")
        require_key_columns(primary_key, before, "deleted row")
    else:
        if after_raw is None:
            raise RejectError(MISSING_FIELD, f"op {kind!r} event has no 'after' image")
        after = types.convert(after_raw, "after")
        require_key_columns(primary_key, after, "new row")
        if op == "UPDATE" and before_raw is not None:
            before = types.convert(before_raw, "before")
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=key,
        ts_ms=ts_ms,
        ingest_ts_ms=ingest_ts_ms,
        primary_key=primary_key,
        columns=types.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=None,
        ddl=None,
        origin=origin(ctx),
    )
    return Parsed([event])


def _parse_non_change(payload: dict[str, Any], ctx: ParseContext, enveloped: bool) -> Parsed:
    """Schema-change events, transaction markers and heartbeats: messages without ``op``."""
    if "ddl" in payload and ("databaseName" in payload or "tableChanges" in payload):
        return _schema_change(payload, ctx)
    if "status" in payload and "id" in payload:
        status = req_str(payload, "status").upper()
        if status in ("BEGIN", "END"):
            return Parsed([], control=f"transaction_{status.lower()}")
        raise RejectError(UNSUPPORTED, f"unknown transaction status {status!r} (expected BEGIN or END)")
    if set(payload) == {"ts_ms"}:  # the value of Debezium's heartbeat topic
        ts = opt_int(payload, "ts_ms")
        if ts is None:
            raise RejectError(MISSING_FIELD, "heartbeat has a null 'ts_ms'")
        return Parsed([], heartbeats=[Heartbeat(epoch_ms(ts))], control="heartbeat")
    if enveloped:
        raise RejectError(MISSING_FIELD, "required field 'payload.op' is missing: not a Debezium change event")
    raise RejectError(WRONG_FORMAT, "no 'op' or 'payload' field: not a Debezium change event")


def _table_from_context(source: Source, ctx: ParseContext) -> None:
    """A message without ``source.table`` names its table through ``--source-table``."""
    if not ctx.source_table:
        raise RejectError(
            MISSING_FIELD, "required field 'source.table' is missing or empty (and no --source-table is configured)"
        )
    database, _, table = ctx.source_table.rpartition(".")
    source.table = table
    if source.database is None:
        source.database = database or None


def _is_oms(source: dict[str, Any]) -> bool:
    """OceanBase OMS writes ``name`` "OMS" and connector ``OB_MYSQL``."""
    name = source.get("name")
    connector = source.get("connector")
    return name == "OMS" or (isinstance(connector, str) and connector.upper().startswith("OB_"))


def _source(doc: dict[str, Any], payload: dict[str, Any], oms: bool) -> Source:
    connector = opt_str(doc, "connector")
    if connector is not None and connector.lower() == "mongodb":
        raise RejectError(UNSUPPORTED, "Debezium MongoDB events (documents as JSON text) are not supported")
    transaction = opt_obj(payload, "transaction")
    return Source(
        format=FORMAT_ID,
        db_type=connector.upper() if connector else None,
        database=blank_to_none(opt_str(doc, "db")),
        schema=blank_to_none(opt_str(doc, "schema")),
        table=blank_to_none(opt_str(doc, "table")),
        binlog_file=None if oms else blank_to_none(opt_str(doc, "file")),
        binlog_pos=None if oms else opt_int(doc, "pos"),
        gtid=blank_to_none(opt_str(doc, "gtid")),
        scn=blank_to_none(opt_str(doc, "scn")),
        checkpoint=opt_str(doc, "pos") if oms else None,
        transaction_id=None if transaction is None else blank_to_none(opt_str(transaction, "id")),
        sequence=blank_to_none(opt_str(doc, "sequence")),
    )


def _source_ts_ms(doc: dict[str, Any]) -> int | None:
    """``source.ts_ms``; 0 (OMS full load: "only incremental has it") means unknown."""
    ts = opt_int(doc, "ts_ms")
    return epoch_ms(ts) if ts else None


def _position(doc: dict[str, Any], oms: bool, ctx: ParseContext) -> tuple[int, int]:
    """(major, minor) of the order key, in the space of the stream's connector; see the module docstring."""
    if oms or not by_position(ctx, True):
        return ctx.partition, ctx.offset
    connector = opt_str(doc, "connector")
    space = connector.lower() if connector else ""
    if space in _BINLOG_CONNECTORS:
        binlog_file = blank_to_none(opt_str(doc, "file"))
        pos = opt_int(doc, "pos")
        if binlog_file is None or pos is None:
            missing = "'source.file' is missing or empty" if binlog_file is None else "'source.pos' is missing or null"
            raise RejectError(
                MISSING_FIELD,
                f"{missing}, and source.connector {space!r} keys this stream by binlog position: the connector "
                f"writes file and pos on every change (a transform must not drop them), {_WAY_OUT}",
            )
        row = opt_int(doc, "row") or 0
        if not 0 <= row < _ROW_LIMIT or pos < 0:
            raise RejectError(BAD_FIELD, f"source.pos {pos} / source.row {row} outside the sortable range")
        return binlog_index(binlog_file), pos * _ROW_LIMIT + row
    if space in _LSN_CONNECTORS:
        lsn = opt_int(doc, "lsn")
        if lsn is None:
            raise RejectError(
                MISSING_FIELD,
                f"'source.lsn' is missing or null, and source.connector {space!r} keys this stream by LSN: the "
                f"connector writes it on every change (a transform must not drop it), {_WAY_OUT}",
            )
        return lsn, 0
    return ctx.partition, ctx.offset


def _row_types(schema: dict[str, Any] | None, encoding: BytesEncoding, oms: bool, *images: Any) -> RowTypes:
    if schema is not None:
        row_schema = image_schema(schema)
        if row_schema is not None:
            return connect.row_types(connect.struct_fields(row_schema, "schema of 'after'"), encoding)
    if not oms:
        return UNTYPED
    # OMS without schema: fractional JSON numbers are FLOAT/DOUBLE (DECIMAL comes as a string).
    floats = sorted(
        {
            name
            for image in images
            if isinstance(image, dict)
            for name, value in image.items()
            if isinstance(value, float | Decimal)
        }
    )
    if not floats:
        return UNTYPED
    return RowTypes((name, _FLOAT64) for name in floats)


def image_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """The struct schema of the row images (``after``, else ``before``), if the envelope declares it."""
    fields = schema.get("fields")
    if not isinstance(fields, list):
        return None
    found: dict[str, Any] = {}
    for item in fields:
        if isinstance(item, dict) and item.get("field") in ("after", "before") and isinstance(item.get("fields"), list):
            found[item["field"]] = item
    return found.get("after") or found.get("before")


def _heartbeat(payload: dict[str, Any], source_doc: dict[str, Any] | None) -> Parsed:
    ts = None if source_doc is None else _source_ts_ms(source_doc)
    if ts is None:
        raw_ts = opt_int(payload, "ts_ms")
        ts = None if raw_ts is None else epoch_ms(raw_ts)
    if ts is None:
        raise RejectError(MISSING_FIELD, "HEARTBEAT message has neither 'source.ts_ms' nor 'ts_ms'")
    table = None
    if source_doc is not None:
        db, name = blank_to_none(opt_str(source_doc, "db")), blank_to_none(opt_str(source_doc, "table"))
        table = f"{db}.{name}" if db and name else name
    return Parsed([], heartbeats=[Heartbeat(ts, table)], control="heartbeat")


def _truncate(source: Source, key: str, ts_ms: int | None, ingest_ts_ms: int | None, ctx: ParseContext) -> ChangeEvent:
    """op ``t``: a TRUNCATE event. Debezium sends no SQL, and binlake invents none:
    ``ddl.sql`` is empty and ``ddl.kind`` TRUNCATE_TABLE (the convention for every vendor)."""
    return ddl_event(
        source, sql="", vendor_type="TRUNCATE", order_key=key, ts_ms=ts_ms, ingest_ts_ms=ingest_ts_ms, ctx=ctx
    )


def _schema_change(payload: dict[str, Any], ctx: ParseContext) -> Parsed:
    """A Debezium schema-change event (the ``<server>`` topic): one DDL event."""
    sql = opt_str(payload, "ddl")
    if not sql or not sql.strip():
        raise RejectError(MISSING_FIELD, "schema change event has an empty 'ddl'")
    source_doc = opt_obj(payload, "source") or {}
    oms = _is_oms(source_doc)
    source = _source(source_doc, payload, oms)
    database = blank_to_none(opt_str(payload, "databaseName"))
    if database is not None:
        source.database = database
    schema_name = blank_to_none(opt_str(payload, "schemaName"))
    if schema_name is not None:
        source.schema = schema_name
    ts_ms = _source_ts_ms(source_doc)
    event = ddl_event(
        source,
        sql=sql,
        vendor_type=None,
        order_key=order_key(*_position(source_doc, oms, ctx), 0),
        ts_ms=ts_ms,
        ingest_ts_ms=opt_int(payload, "ts_ms"),
        ctx=ctx,
    )
    return Parsed([event])
