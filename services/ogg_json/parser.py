"""``ogg-json``: Oracle GoldenGate for Big Data, JSON formatter, operation-modeled output.

One operation per message::

    {"table": "QASOURCE.TCUSTORD",        # SCHEMA.TABLE, or CATALOG.SCHEMA.TABLE
     "op_type": "U",                      # I insert, U update, D delete, T truncate
     "op_ts": "2015-11-05 18:45:39.000000",       # commit time of the operation, UTC
     "current_ts": "2016-10-05T10:15:51.310002",  # when the formatter wrote it (local
                                                  # wall clock of the GoldenGate host)
     "pos": "00000000000000004300",       # trail position: sequence number (10 digits)
                                          # then RBA (10 digits)
     "primary_keys": ["CUST_CODE", ...],  # includePrimaryKeys=true
     "tokens": {"txid": ...},             # trail tokens (includeTokens=true)
     "before": {col: value} | null,       # before image (U, D)
     "after": {col: value} | null}        # after image (I, U)

Values are JSON-typed and untyped: numbers stay exact (``17520.00`` keeps its two
decimals), dates stay the strings GoldenGate wrote (``1994-09-30:15:33:00``),
binary stays its base64 text; every column is reported ``inferred=True``.
With ``includeIsMissingFields`` GoldenGate adds ``COL_isMissing`` booleans; a
column marked missing is left out of the image (unknown, not NULL) and the
markers themselves are not columns.

Compressed updates carry only the key and changed columns in ``after`` (an
absent column is unknown) and ``before`` as captured (often the full row).
``changed_columns`` lists the columns present in both images whose values
differ; it is None unless both images are given. Truncate (``T``) has no images
and no SQL: it becomes a TRUNCATE event with ``ddl.sql`` empty and kind
TRUNCATE_TABLE.

``db_type`` is ORACLE (override with the option ``db_type`` for other capture
sources; for MySQL-family ones (MYSQL, MARIADB, OB_MYSQL, TIDB), which have no
schema level, a two-part ``table`` is ``database.table``); ``tokens``
``txid``/``xid`` give ``transaction_id`` and ``csn``/``scn`` give ``scn``; ``pos`` is kept verbatim as ``checkpoint``.

Order key: ``pos`` is the trail sequence number times 10^10 plus the RBA; major
= ``int(pos) // 10^10`` (sequence number), minor = ``int(pos) % 10^10`` (RBA).
For the usual 20-digit ``pos`` this orders exactly as ``int(pos)`` does, and
positions with longer sequence numbers (up to 30 digits) still compare
correctly. Only operation-modeled JSON is read: the row-modeled formatter, the
schema/payload wrapper and other vendors' messages are WRONG_FORMAT.
"""

from __future__ import annotations

import datetime as _dt
from typing import Any, Final

from binlake.services.ogg_json.values import present_columns, untyped_image
from binlake.shared.event.model import ChangeEvent, Ddl, Op, Source
from binlake.shared.event.values import Image, Unparsed
from binlake.shared.parsing.common import origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    INCONSISTENT,
    MISSING_FIELD,
    UNSUPPORTED,
    WRONG_FORMAT,
    RejectError,
    value_problem,
)
from binlake.shared.parsing.jsondoc import decode_and_parse, opt_obj, opt_str, str_list
from binlake.shared.parsing.order import order_key
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.rows import UNTYPED, require_key_columns
from binlake.shared.parsing.temporal import UTC, epoch_ms_of, parse_instant

FORMAT_ID: Final = "ogg-json"
PARSER_VERSION: Final = "1"

_OPS: Final[dict[str, Op]] = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "T": "TRUNCATE"}
_METADATA: Final = frozenset({"table", "op_type", "op_ts", "current_ts", "pos", "primary_keys", "tokens"})
_RBA_SCALE: Final = 10**10
_MAX_POS_DIGITS: Final = 30
_TXID_TOKENS: Final = ("txid", "TXID", "xid", "XID")
_SCN_TOKENS: Final = ("csn", "CSN", "scn", "SCN")


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: parse_doc(doc, ctx), numbers_are_values=True)


def parse_doc(doc: Any, ctx: ParseContext) -> Parsed:
    """The canonical event of one decoded GoldenGate JSON operation."""
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a GoldenGate JSON operation)")
    op = _op(doc)
    catalog, schema, table = _table_name(doc)
    ts_ms = time_ms(doc, "op_ts", UTC)
    ingest_ts_ms = time_ms(doc, "current_ts", ctx.source_timezone)
    pos = _pos(doc)
    tokens = opt_obj(doc, "tokens") or {}
    db_type_option = ctx.options.get("db_type")
    db_type = db_type_option.upper() if isinstance(db_type_option, str) and db_type_option else "ORACLE"
    if catalog is None and schema is not None and db_type in DATABASE_IS_SCHEMA:
        # MySQL-family sources have no schema level: GoldenGate's two-part name is database.table.
        catalog, schema = schema, None
    source = Source(
        format=FORMAT_ID,
        db_type=db_type,
        database=catalog,
        schema=schema,
        table=table,
        scn=_token(tokens, _SCN_TOKENS),
        checkpoint=pos,
        transaction_id=_token(tokens, _TXID_TOKENS),
    )
    major, minor = divmod(int(pos), _RBA_SCALE)
    key = order_key(major, minor, 0)
    primary_key = str_list(doc.get("primary_keys"), "primary_keys")
    raw_before = doc.get("before")
    raw_after = doc.get("after")
    if op == "TRUNCATE":
        if raw_before is not None or raw_after is not None:
            raise RejectError(INCONSISTENT, "a truncate (op_type T) must not carry before/after images")
        return Parsed([_event("TRUNCATE", source=source, key=key, ts=(ts_ms, ingest_ts_ms), ctx=ctx)])
    if raw_before is None and raw_after is None and "before" not in doc and "after" not in doc:
        extra = [name for name in doc if name not in _METADATA]
        if extra:
            raise RejectError(
                WRONG_FORMAT,
                f"no 'before'/'after' images but column-like fields {extra[:3]}: row-modeled GoldenGate JSON "
                "is not supported (configure the operation-modeled JSON formatter)",
            )
    before = None if raw_before is None else untyped_image(present_columns(raw_before, "before"), "before")
    after = None if raw_after is None else untyped_image(present_columns(raw_after, "after"), "after")
    changed: list[str] | None = None
    if op == "INSERT":
        if after is None:
            raise RejectError(MISSING_FIELD, "insert (op_type I) has no 'after' image")
        if before is not None:
            raise RejectError(INCONSISTENT, "insert (op_type I) must not carry a 'before' image")
        require_key_columns(primary_key, after, "after")
    elif op == "DELETE":
        if before is None:
            raise RejectError(MISSING_FIELD, "delete (op_type D) has no 'before' image")
        if after is not None:
            raise RejectError(INCONSISTENT, "delete (op_type D) must not carry an 'after' image")
        require_key_columns(primary_key, before, "before")
    else:
        if before is None and after is None:
            raise RejectError(MISSING_FIELD, "update (op_type U) has neither a 'before' nor an 'after' image")
        if before is not None:
            require_key_columns(primary_key, before, "before")
        else:
            require_key_columns(primary_key, after, "after")
        if before is not None and after is not None:
            changed = [name for name, value in after.items() if name in before and not _same(before[name], value)]
    event = _event(
        op,
        source=source,
        key=key,
        ts=(ts_ms, ingest_ts_ms),
        ctx=ctx,
        primary_key=primary_key,
        images=(before, after),
        changed=changed,
    )
    return Parsed([event])


def _same(a: Any, b: Any) -> bool:
    # bool is an int in Python (True == 1): a change between them is still a change.
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def _event(
    op: Op,
    *,
    source: Source,
    key: str,
    ts: tuple[int | None, int | None],
    ctx: ParseContext,
    primary_key: list[str] | None = None,
    images: tuple[Image | None, Image | None] = (None, None),
    changed: list[str] | None = None,
) -> ChangeEvent:
    ts_ms, ingest_ts_ms = ts
    before, after = images
    return ChangeEvent(
        op=op,
        source=source,
        order_key=key,
        ts_ms=ts_ms,
        ingest_ts_ms=ingest_ts_ms,
        primary_key=primary_key or [],
        columns=[] if op == "TRUNCATE" else UNTYPED.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=changed,
        ddl=Ddl("", "TRUNCATE_TABLE") if op == "TRUNCATE" else None,
        origin=origin(ctx, 0),
    )


def _op(doc: dict[str, Any]) -> Op:
    value = doc.get("op_type")
    if value is None:
        if "payload" in doc:
            raise RejectError(
                WRONG_FORMAT,
                "a schema/payload envelope (Debezium, or GoldenGate's wrapped JSON), "
                "not operation-modeled GoldenGate JSON",
            )
        if "table" in doc and ("pos" in doc or "op_ts" in doc):
            raise RejectError(MISSING_FIELD, "required field 'op_type' is missing or null")
        raise RejectError(WRONG_FORMAT, "no 'op_type' field: not a GoldenGate JSON operation")
    if not isinstance(value, str):
        raise RejectError(BAD_FIELD, "field 'op_type' must be a string")
    op = _OPS.get(value)
    if op is None:
        raise RejectError(UNSUPPORTED, f"unknown op_type {value[:40]!r} (expected I, U, D or T)")
    return op


DATABASE_IS_SCHEMA: Final = frozenset({"MYSQL", "MARIADB", "OB_MYSQL", "TIDB"})


def _table_name(doc: dict[str, Any]) -> tuple[str | None, str | None, str]:
    """(catalog, schema, table) from ``SCHEMA.TABLE`` or ``CATALOG.SCHEMA.TABLE``."""
    value = doc.get("table")
    if value is None:
        raise RejectError(MISSING_FIELD, "required field 'table' is missing or null")
    if not isinstance(value, str):
        raise RejectError(BAD_FIELD, "field 'table' must be a string")
    parts = value.split(".")
    if len(parts) > 3 or not all(parts):
        raise RejectError(
            BAD_FIELD, f"field 'table' must be TABLE, SCHEMA.TABLE or CATALOG.SCHEMA.TABLE, got {value[:120]!r}"
        )
    if len(parts) == 3:
        return parts[0], parts[1], parts[2]
    if len(parts) == 2:
        return None, parts[0], parts[1]
    return None, None, parts[0]


def time_ms(doc: dict[str, Any], key: str, zone: _dt.tzinfo) -> int | None:
    text = opt_str(doc, key)
    if text is None:
        return None
    try:
        value = parse_instant(text, zone)
    except ValueError as exc:
        raise RejectError(BAD_FIELD, f"field {key!r}: {value_problem(exc, text)}") from None
    if isinstance(value, Unparsed):
        raise RejectError(BAD_FIELD, f"field {key!r} is not a valid date-time: {text[:60]!r}")
    return epoch_ms_of(value)


def _pos(doc: dict[str, Any]) -> str:
    pos = opt_str(doc, "pos")
    if pos is None:
        raise RejectError(MISSING_FIELD, "required field 'pos' (trail position) is missing or null")
    if not pos.isascii() or not pos.isdigit() or len(pos) > _MAX_POS_DIGITS:
        raise RejectError(BAD_FIELD, f"field 'pos' must be at most {_MAX_POS_DIGITS} digits, got {pos[:60]!r}")
    return pos


def _token(tokens: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for name in names:
        value = tokens.get(name)
        if value is None:
            continue
        if isinstance(value, str):
            return value or None
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise RejectError(BAD_FIELD, f"token {name!r} must be a string")
    return None
