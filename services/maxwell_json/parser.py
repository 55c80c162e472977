"""``maxwell-json``: Zendesk Maxwell's JSON output, one row (or one DDL) per message.

Row message (``type`` insert / update / delete / bootstrap-insert)::

    {"database": "test", "table": "e", "type": "update",
     "ts": 1477053234,                  # seconds: when the row was written (binlog event time)
     "xid": 23396, "xoffset": 2,        # transaction id; row offset in it (output_xoffset;
                                        # never on the commit row)
     "commit": true,                    # only on the last row of a transaction
     "position": "master.000006:800911",# binlog file:offset of the row event (output_binlog_position)
     "gtid": "uuid:N",                  # output_gtid_position
     "server_id": 23042, "thread_id": 108,
     "primary_key": [1], "primary_key_columns": ["id"],  # output_primary_keys / _key_columns
     "data": {col: value},              # the row (after image; the deleted row for delete)
     "old": {col: prior value}}         # update only: prior values of the changed columns

DDL message (``output_ddl``): ``type`` table-create / table-alter / table-drop /
database-create / database-alter / database-drop, with ``sql``, ``def`` and ``old``
(table definitions), ``ts`` in *milliseconds*, ``position``. ``bootstrap-start`` /
``bootstrap-complete`` frame a bootstrap (control messages, no event);
``heartbeat`` is a heartbeat. ``bootstrap-insert`` rows are SNAPSHOT events.

Values are JSON-typed and Maxwell sends no column types, so every column is
inferred (``inferred=True``): numbers stay exact (DECIMAL and DOUBLE both arrive
as JSON numbers and become decimals with the digits Maxwell wrote), DATETIME /
TIMESTAMP / DATE / TIME stay the strings Maxwell wrote ("2016-10-21
05:33:37.523000", zero dates verbatim), JSON columns and SETs (JSON arrays)
become compact JSON text, and BLOB / BINARY values stay the base64 text Maxwell
writes: without a type, base64 text cannot be told from an ordinary string.

UPDATE: ``before`` = ``data`` overlaid with ``old`` (Maxwell's documented
``data.merge(old)``), ``changed_columns`` = the keys of ``old``; an update
without ``old`` has ``before`` and ``changed_columns`` None (unknown).

Order key: option ``order`` puts the whole stream in one key space, whatever
each message carries:

- ``order=kafka`` (the default: Maxwell's default output has no ``position``):
  major = input partition, minor = input offset (the input's Kafka order). A
  ``position`` is still read into ``source.binlog_file`` / ``binlog_pos`` but
  does not order. Kafka-order keys compare only within one input partition:
  Maxwell's producer_partition_by ``database`` (the default) or ``table``
  keeps a table in one partition, ``primary_key`` a row; the other choices
  (``transaction_id``, ``thread_id``, ``column``, ``random``) can split a
  row's changes and must not be used with this order.
- ``order=position`` (with Maxwell's output_binlog_position on): major =
  binlog file index, minor = offset * 10^10 + tx-row sequence, whatever the
  partitioning. The tx-row sequence keeps the rows of one binlog event /
  transaction in order: ``xoffset`` when present, 9999999999 for the commit
  row (which carries no ``xoffset`` and is the transaction's last row), else
  0. Bootstrap rows carry the bootstrap request's position, so binlog changes
  after it sort after them. A row, bootstrap row or DDL message without
  ``position`` is a reject (``missing_field``) whose reason says what to do:
  turn output_binlog_position back on, or set ``order=kafka`` and rebuild the
  mirrors fed so far. Heartbeats and bootstrap-start / -complete make no
  event and are read under either order.

So turning output_binlog_position on or off mid-stream never mixes the two
spaces: under ``kafka`` the keys do not change, under ``position`` the
messages without it are dead-lettered. The earlier release chose per
message: the binlog key with ``position``, else (``ts`` seconds, ``xid``),
and ``ts`` is the binlog event's time, so a row's changes in one second could
invert (``xid`` is not commit order) and a transaction that started earlier
but committed later sorted first. A stream it read with
output_binlog_position on keeps comparable keys under ``order=position``; a
stream it read without it gets new keys under either order.
"""

from __future__ import annotations

from typing import Any, Final

from binlake.services.maxwell_json.values import untyped_image
from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import Image
from binlake.shared.parsing.common import blank_to_none, ddl_event, epoch_ms, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_FIELD, INCONSISTENT, MISSING_FIELD, UNSUPPORTED, WRONG_FORMAT, RejectError
from binlake.shared.parsing.jsondoc import decode_and_parse, opt_int, opt_list, opt_str, str_list
from binlake.shared.parsing.order import binlog_index, by_position, kafka_order_key, order_key
from binlake.shared.parsing.result import Heartbeat, Parsed
from binlake.shared.parsing.rows import UNTYPED, overlay, require_key_columns

FORMAT_ID: Final = "maxwell-json"
PARSER_VERSION: Final = "1"

_ROW_OPS: Final[dict[str, Op]] = {
    "insert": "INSERT",
    "update": "UPDATE",
    "delete": "DELETE",
    "bootstrap-insert": "SNAPSHOT",
}
_CONTROL: Final = {"bootstrap-start": "bootstrap_start", "bootstrap-complete": "bootstrap_complete"}
# Maxwell DDL types to canonical kinds; the SQL text decides first (ddl_kind).
_DDL_KINDS: Final[dict[str, str | None]] = {
    "table-create": "CREATE_TABLE",
    "table-alter": "ALTER_TABLE",
    "table-drop": "DROP_TABLE",
    "database-create": "CREATE_DATABASE",
    "database-alter": None,
    "database-drop": "DROP_DATABASE",
}
# Uppercase change types and flat-message fields mean a Canal-style message.
_CANAL_TYPES: Final = frozenset({"INSERT", "UPDATE", "DELETE", "INIT", "CREATE", "ALTER", "ERASE", "TRUNCATE"})
_CANAL_FIELDS: Final = ("isDdl", "pkNames", "mysqlType", "sqlType")

_SEQ_SCALE: Final = 10**10
"""Room for the tx-row sequence (and for a 32-bit binlog offset or half an xid)."""
_COMMIT_SEQ: Final = _SEQ_SCALE - 1
_MAX_FILE_NAME: Final = 512
_NO_POSITION: Final = (
    "no 'position' field, and option order=position keys this stream by binlog position: turn Maxwell's "
    "output_binlog_position back on, or set order=kafka and rebuild the mirrors fed so far (keys of the two "
    "orders do not compare)"
)


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: parse_doc(doc, ctx), numbers_are_values=True)


def parse_doc(doc: Any, ctx: ParseContext) -> Parsed:
    """Canonical events from one decoded Maxwell message."""
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a Maxwell message)")
    kind = _type(doc)
    database = blank_to_none(opt_str(doc, "database"))
    table = blank_to_none(opt_str(doc, "table"))
    if kind == "heartbeat":
        ts_ms = _ts_ms(doc)
        name = f"{database}.{table}" if database and table else table
        return Parsed([], heartbeats=[Heartbeat(ts_ms, name)], control="heartbeat")
    control = _CONTROL.get(kind)
    if control is not None:
        return Parsed([], control=control)
    op = _ROW_OPS.get(kind)
    if op is None:
        if kind in _DDL_KINDS or kind.startswith(("table-", "database-")):
            return _ddl(doc, kind, database, table, ctx)
        raise RejectError(
            UNSUPPORTED,
            f"unknown Maxwell type {kind[:60]!r} (expected insert, update, delete, bootstrap-insert, "
            "bootstrap-start, bootstrap-complete, heartbeat, table-* or database-*)",
        )
    return _row(doc, op, database, table, ctx)


def _type(doc: dict[str, Any]) -> str:
    kind = doc.get("type")
    if isinstance(kind, str):
        if kind in _CANAL_TYPES or any(field in doc for field in _CANAL_FIELDS) or isinstance(doc.get("data"), list):
            raise RejectError(WRONG_FORMAT, "a Canal-style flat message (uppercase type / data array), not Maxwell")
        return kind
    if kind is not None:
        raise RejectError(BAD_FIELD, "field 'type' must be a string")
    if "op_type" in doc:
        raise RejectError(WRONG_FORMAT, "an Oracle GoldenGate message ('op_type'), not Maxwell")
    if "payload" in doc or "op" in doc:
        raise RejectError(WRONG_FORMAT, "a Debezium-style message ('payload'/'op'), not Maxwell")
    if "table" in doc and isinstance(doc.get("data"), dict):
        raise RejectError(MISSING_FIELD, "required field 'type' is missing or null")
    raise RejectError(WRONG_FORMAT, "no 'type' field: not a Maxwell message")


def _int(doc: dict[str, Any], key: str) -> int | None:
    # jsondoc.as_int lets int()'s ValueError escape for digit strings beyond
    # Python's 4300-digit limit; report it as a bad field instead.
    try:
        return opt_int(doc, key)
    except ValueError:
        raise RejectError(BAD_FIELD, f"field {key!r} must be an integer of sensible size") from None


def _ts_ms(doc: dict[str, Any]) -> int:
    ts = _int(doc, "ts")
    if ts is None:
        raise RejectError(MISSING_FIELD, "required field 'ts' is missing or null")
    return epoch_ms(ts)


def _position(doc: dict[str, Any]) -> tuple[str, int] | None:
    """``file:offset`` of ``position`` (output_binlog_position)."""
    text = opt_str(doc, "position")
    if text is None:
        return None
    file_name, _, offset = text.rpartition(":")
    if not file_name or len(file_name) > _MAX_FILE_NAME or not offset.isascii() or not offset.isdigit():
        raise RejectError(BAD_FIELD, f"field 'position' must be 'binlog-file:offset', got {text[:80]!r}")
    if len(offset) > 10:
        raise RejectError(BAD_FIELD, f"binlog offset in 'position' is out of range: {text[:80]!r}")
    return file_name, int(offset)


def _tx_sequence(doc: dict[str, Any]) -> int:
    """Where the row sits in its transaction (see the module docstring)."""
    commit = doc.get("commit")
    if commit is not None and not isinstance(commit, bool):
        raise RejectError(BAD_FIELD, "field 'commit' must be a boolean")
    xoffset = _int(doc, "xoffset")
    if xoffset is not None:
        if not 0 <= xoffset < _COMMIT_SEQ:
            raise RejectError(BAD_FIELD, f"field 'xoffset' is out of range: {xoffset}")
        return xoffset
    return _COMMIT_SEQ if commit else 0


def _order(position: tuple[str, int] | None, seq: int, ctx: ParseContext, row: int) -> str:
    """The key in the stream's one space, option ``order`` (see the module docstring)."""
    if not by_position(ctx, False):
        return kafka_order_key(ctx, row)
    if position is None:
        raise RejectError(MISSING_FIELD, _NO_POSITION)
    try:
        major = binlog_index(position[0])
    except ValueError:  # a sequence number beyond int()'s digit limit
        raise RejectError(BAD_FIELD, "binlog file in 'position' has an out-of-range sequence number") from None
    return order_key(major, position[1] * _SEQ_SCALE + seq, row)


def _source(doc: dict[str, Any], database: str | None, table: str | None, position: tuple[str, int] | None) -> Source:
    xid = _int(doc, "xid")
    return Source(
        format=FORMAT_ID,
        db_type="MYSQL",
        database=database,
        schema=None,
        table=table,
        binlog_file=None if position is None else position[0],
        binlog_pos=None if position is None else position[1],
        gtid=blank_to_none(opt_str(doc, "gtid")),
        transaction_id=None if xid is None else str(xid),
    )


def _ddl(doc: dict[str, Any], kind: str, database: str | None, table: str | None, ctx: ParseContext) -> Parsed:
    sql = opt_str(doc, "sql")
    if not sql:
        raise RejectError(MISSING_FIELD, f"DDL message of type {kind!r} has no 'sql' text")
    ts_ms = _ts_ms(doc)  # DDL messages carry milliseconds; epoch_ms tells by size
    position = _position(doc)
    event = ddl_event(
        _source(doc, database, table, position),
        sql=sql,
        vendor_type=_DDL_KINDS.get(kind),
        order_key=_order(position, 0, ctx, 0),
        ts_ms=ts_ms,
        ingest_ts_ms=None,
        ctx=ctx,
    )
    return Parsed([event])


def _primary_key(doc: dict[str, Any]) -> list[str]:
    names = str_list(doc.get("primary_key_columns"), "primary_key_columns")
    values = opt_list(doc, "primary_key")
    if names and values is not None and len(values) != len(names):
        raise RejectError(
            INCONSISTENT,
            f"'primary_key' has {len(values)} value(s) but 'primary_key_columns' names {len(names)} column(s)",
        )
    return names


def _row(doc: dict[str, Any], op: Op, database: str | None, table: str | None, ctx: ParseContext) -> Parsed:
    if table is None:
        raise RejectError(MISSING_FIELD, "required field 'table' is missing or empty")
    ts_ms = _ts_ms(doc)
    raw_data = doc.get("data")
    if raw_data is None:
        raise RejectError(MISSING_FIELD, f"{op.lower()} message has no 'data' object")
    data = untyped_image(raw_data, "data")
    raw_old = doc.get("old")
    before: Image | None = None
    after: Image | None = None
    changed: list[str] | None = None
    if op == "UPDATE":
        after = data
        if raw_old is not None:
            old = untyped_image(raw_old, "old")
            before = overlay(data, old)
            changed = list(old)
        # Without 'old' the prior row is unknown: Maxwell omits an empty 'old', which
        # means "nothing changed" with full row images but "not logged" with
        # binlog_row_image=MINIMAL, so before and changed_columns stay None.
    else:
        if raw_old is not None:
            raise RejectError(INCONSISTENT, f"a {op.lower()} message must not carry 'old' values")
        if op == "DELETE":
            before = data
        else:
            after = data
    primary_key = _primary_key(doc)
    require_key_columns(primary_key, before if before is not None else after, "row")
    position = _position(doc)
    event = ChangeEvent(
        op=op,
        source=_source(doc, database, table, position),
        order_key=_order(position, _tx_sequence(doc), ctx, 0),
        ts_ms=ts_ms,
        ingest_ts_ms=None,
        primary_key=primary_key,
        columns=UNTYPED.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=changed,
        ddl=None,
        origin=origin(ctx, 0),
    )
    return Parsed([event])
