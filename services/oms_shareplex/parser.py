"""``oms-shareplex``: OceanBase OMS "SharePlex" JSON serialization.

One message is one row or one DDL::

    {"data": {col: value},      # INSERT/DELETE: the full row; UPDATE: the changed values
     "meta": {"time": "YYYY-MM-DDTHH:mm:ss", "op": "ins" | "upd" | "del" | "ddl",
              "posttime": "YYYY-MM-DDTHH:mm:ss", "idx", "size", "seq",
              "table": "db.table", "rowid": "db.table-<pk values>", "trans", "scn"},
     "key": {col: value},       # UPDATE only: the row before the change
     "sql": {"ddl": "..."}}     # DDL only

No column types and no primary key names are sent: every column is inferred
from its JSON value (as in OMS Default) and ``primary_key`` is empty. An UPDATE's
``key`` is the row before the change (seed 004: "僅 UPDATE 存在,表示變更前的值",
and its sample holds every column) and ``data`` holds the changed values, so
``before`` = ``key``, ``after`` = ``key`` overlaid with ``data`` (a column only
``data`` names comes last), and ``changed_columns`` = the names in ``data``.
Before this release ``after`` was ``data`` alone, so the unchanged columns read
as unknown. ``meta.time`` (the change) and
``meta.posttime`` (the write to the target) are wall clocks without zone, read
in the configured source time zone. ``meta.table`` is ``database.table``; a
three-part name is ``tenant.database.table`` (OMS writes OceanBase databases as
``tenant.database``). ``meta.scn`` is kept verbatim in ``source.scn``
(``"null"`` text counts as absent), ``meta.seq`` in ``source.sequence``,
``meta.trans`` is the transaction id; the deprecated ``idx``/``size`` and the
``rowid`` (key values without names) are not used.

Order key: the input's Kafka order: major = input partition, minor = input
offset, row 0 (one row per message). ``meta.scn`` is built like OMS Default's
storeDataSequence (a time in ms * 10^5 + a counter of one sync process) and
only with sequenceEnabled=true: the DDL sample's is the text ``"null"``.
``meta.time`` is the change time in whole seconds and ``meta.seq`` exists only
with transactionEnabled. Before this release the key was ``scn`` when numeric,
else ``meta.time`` * 10^8, else 0: a row's changes in one second tied, and DDL
compared with rows on another scale. OMS writes a partition in its own
delivery order, so within one input partition Kafka order is the source order;
keys of different partitions do not compare. OMS's Kafka partition rules
"Hash" (by primary key value), "Table" and "One" each keep a row's changes in
one partition; "Table" and "One" also keep a TRUNCATE or table-dropping DDL
with the rows it applies to.
"""

from __future__ import annotations

from typing import Any, Final

from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import Image
from binlake.shared.parsing.common import blank_to_none, ddl_event, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_FIELD, MISSING_FIELD, UNSUPPORTED, WRONG_FORMAT, RejectError
from binlake.shared.parsing.jsondoc import decode_and_parse, obj, opt_obj, opt_str
from binlake.shared.parsing.order import kafka_order_key
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.rows import UNTYPED, overlay
from binlake.shared.parsing.temporal import local_text_to_ms

FORMAT_ID: Final = "oms-shareplex"
PARSER_VERSION: Final = "1"

_OPS: Final[dict[str, Op]] = {"ins": "INSERT", "upd": "UPDATE", "del": "DELETE"}


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: _parse(doc, ctx), numbers_are_values=True)


def _split_table(name: str | None) -> tuple[str | None, str | None, str | None]:
    """(tenant, database, table) from ``meta.table``."""
    if name is None:
        return None, None, None
    parts = name.split(".")
    if len(parts) == 1:
        return None, None, name
    if len(parts) == 2:
        return None, blank_to_none(parts[0]), blank_to_none(parts[1])
    return blank_to_none(parts[0]), blank_to_none(".".join(parts[1:-1])), blank_to_none(parts[-1])


def _wall_clock_ms(meta: dict[str, Any], key: str, ctx: ParseContext) -> int | None:
    text = blank_to_none(opt_str(meta, key))
    if text is None:
        return None
    try:
        return local_text_to_ms(text.strip(), ctx.source_timezone)
    except ValueError:
        raise RejectError(
            BAD_FIELD, f"field 'meta.{key}' must be a date-time YYYY-MM-DDTHH:mm:ss, got {text[:60]!r}"
        ) from None


def _verbatim(meta: dict[str, Any], key: str) -> str | None:
    text = blank_to_none(opt_str(meta, key))
    return None if text is None or text.strip().lower() == "null" else text


def _image(doc: dict[str, Any], key: str) -> dict[str, Any]:
    value = doc.get(key)
    if value is None:
        raise RejectError(MISSING_FIELD, f"required field {key!r} is missing or null")
    if not isinstance(value, dict):
        raise RejectError(BAD_FIELD, f"field {key!r} must be an object of column values")
    return value


def _parse(doc: Any, ctx: ParseContext) -> Parsed:
    if not isinstance(doc, dict) or "meta" not in doc:
        raise RejectError(WRONG_FORMAT, "expected a JSON object with a 'meta' object (OMS SharePlex)")
    if doc["meta"] is None:
        raise RejectError(MISSING_FIELD, "required field 'meta' is null")
    meta = obj(doc["meta"], "field 'meta'")
    kind = meta.get("op")
    if kind is None:
        raise RejectError(MISSING_FIELD, "required field 'meta.op' is missing or null")
    if not isinstance(kind, str):
        raise RejectError(BAD_FIELD, "field 'meta.op' must be a string (ins, upd, del or ddl)")
    kind = kind.strip().lower()
    tenant, database, table = _split_table(blank_to_none(opt_str(meta, "table")))
    ts_ms = _wall_clock_ms(meta, "time", ctx)
    ingest_ts_ms = _wall_clock_ms(meta, "posttime", ctx)
    scn = _verbatim(meta, "scn")
    key = kafka_order_key(ctx)
    source = Source(
        format=FORMAT_ID,
        db_type=None,
        database=database,
        schema=None,
        table=table,
        tenant=tenant,
        scn=scn,
        transaction_id=_verbatim(meta, "trans"),
        sequence=_verbatim(meta, "seq"),
    )

    if kind == "ddl":
        sql = (opt_obj(doc, "sql") or {}).get("ddl")
        if not isinstance(sql, str) or not sql.strip():
            raise RejectError(MISSING_FIELD, "ddl message has no statement text in 'sql.ddl'")
        event = ddl_event(
            source, sql=sql, vendor_type=None, order_key=key, ts_ms=ts_ms, ingest_ts_ms=ingest_ts_ms, ctx=ctx
        )
        return Parsed([event])

    op = _OPS.get(kind)
    if op is None:
        raise RejectError(UNSUPPORTED, f"unknown meta.op {kind!r} (expected ins, upd, del or ddl)")
    if table is None:
        raise RejectError(MISSING_FIELD, "required field 'meta.table' is missing or empty")
    data = _image(doc, "data")
    before: Image | None = None
    after: Image | None = None
    changed: list[str] | None = None
    if op == "UPDATE":
        prior = _image(doc, "key")
        if not prior:
            raise RejectError(MISSING_FIELD, "upd message has no prior values in 'key'")
        before = UNTYPED.convert(prior, "key")
        changes = UNTYPED.convert(data, "data")
        after = overlay(before, changes)  # key is the whole prior row: the new row is it plus the changes
        changed = list(changes)
    else:
        if not data:
            raise RejectError(MISSING_FIELD, f"{kind} message has no column values in 'data'")
        image = UNTYPED.convert(data, "data")
        before, after = (image, None) if op == "DELETE" else (None, image)
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=key,
        ts_ms=ts_ms,
        ingest_ts_ms=ingest_ts_ms,
        primary_key=[],
        columns=UNTYPED.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=changed,
        ddl=None,
        origin=origin(ctx),
    )
    return Parsed([event])
