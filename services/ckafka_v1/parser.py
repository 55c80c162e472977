"""``ckafka-v1``: Tencent CKafka connector MySQL subscription, "官方格式一" (official format one).

Two shapes arrive on the same topic. DML is CKafka's own upper-case envelope::

    {"BINLOG_NAME": "mysql-bin.000003", "BINLOG_POS": 484, "DATABASE", "TABLE",
     "EVENT_SERVER_ID": null, "GLOBAL_ID": gtid | null, "GROUP_ID": null,
     "NEW_VALUES": {col: "text"} | null, "OLD_VALUES": {col: "text"} | null,
     "TIME": "yyyyMMddHHmmss", "TYPE": "I" | "U" | "D"}

with one row per message, no column types (every column is inferred from its
JSON value, so values stay the strings CKafka wrote) and no primary key names.
``TIME`` is a wall clock without zone, read in ``ctx.source_timezone`` (the
published insert sample ``19700101080000`` is epoch 0 at UTC+8). The document's
table spells insert as a lower-case ``l`` while its sample says ``I``: ``I``,
``i`` and ``l`` are all read as INSERT. An UPDATE carries the full prior row in
``OLD_VALUES``; ``changed_columns`` are the columns whose values differ.

DDL uses the Canal flat shape (``isDdl: true``) and is handed to
``services.canal_json.flat``; its ``es``/``ts`` are seconds in most published
samples and milliseconds in others, which ``epoch_ms`` sorts out. Canal flat
*row* messages are not part of this format and are rejected as wrong_format.

Order key: the input's Kafka order, major = input partition, minor = input
offset, row 0, for DML and DDL alike. DML messages carry a binlog position but
DDL messages do not (their ``es`` is a time and their ``id`` is 0), and a
TRUNCATE or a dropped table is ordered against the table's rows: before this
release DML was keyed by (binlog file index, ``BINLOG_POS``) and DDL by
(``es`` ms, ``id``), two key spaces in which every DDL sorted after every DML
row, so rows changed after a DROP TABLE looked older than it. One key space
for the whole topic fixes that; ``BINLOG_NAME``/``BINLOG_POS`` stay in
``source.binlog_file``/``binlog_pos``. Keys compare only within one input
partition, so the topic's partitioning must keep a row's changes in one
partition (a one-partition topic, or partitioning by table or by table and
primary key); only partitioning by table (or one partition) also puts a
TRUNCATE or DROP in the partition of the rows it applies to.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final

from binlake.services.canal_json.flat import FlatProfile, order_by_input, parse_flat
from binlake.shared.event.model import ChangeEvent, Op, Source
from binlake.shared.event.values import INT64_MAX, INT64_MIN, Image, Value
from binlake.shared.parsing import temporal
from binlake.shared.parsing.common import blank_to_none, epoch_ms, origin
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
from binlake.shared.parsing.jsondoc import decode_and_parse, opt_int, opt_obj, opt_str, req_int, req_str
from binlake.shared.parsing.order import kafka_order_key
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.rows import UNTYPED

FORMAT_ID: Final = "ckafka-v1"
PARSER_VERSION: Final = "1"

DDL_PROFILE: Final = FlatProfile(FORMAT_ID, "mysql", "latin1", "data", order_by_input)

_OPS: Final[dict[str, Op]] = {
    "I": "INSERT",
    "i": "INSERT",
    "l": "INSERT",  # the vendor document's field table writes insert as a lower-case L
    "U": "UPDATE",
    "u": "UPDATE",
    "D": "DELETE",
    "d": "DELETE",
}
_DML_KEYS: Final = ("TYPE", "BINLOG_NAME", "BINLOG_POS", "NEW_VALUES", "OLD_VALUES")
_FLAT_ROW_TYPES: Final = frozenset({"INSERT", "UPDATE", "DELETE", "INIT"})


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: _parse_doc(doc, ctx))


def _parse_doc(doc: Any, ctx: ParseContext) -> Parsed:
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a CKafka format-one message)")
    if any(key in doc for key in _DML_KEYS):
        return _parse_dml(doc, ctx)
    if "isDdl" in doc or ("type" in doc and "sql" in doc):
        return _parse_ddl(doc, ctx)
    raise RejectError(
        WRONG_FORMAT, "neither a CKafka format-one DML message (TYPE, BINLOG_NAME...) nor a Canal-shaped DDL message"
    )


def _parse_ddl(doc: dict[str, Any], ctx: ParseContext) -> Parsed:
    kind = doc.get("type")
    if doc.get("isDdl") is False or (isinstance(kind, str) and kind.upper() in _FLAT_ROW_TYPES):
        raise RejectError(
            WRONG_FORMAT,
            "a Canal flat row message: ckafka-v1 uses the Canal shape only for DDL (parse it as canal-json)",
        )
    for key in ("es", "ts"):
        # Guarded here because the shared flat parser passes any integer on.
        value = opt_int(doc, key)
        if value is not None and not INT64_MIN <= epoch_ms(value) <= INT64_MAX:
            raise RejectError(BAD_FIELD, f"field {key!r} is outside the 64-bit millisecond range")
    return parse_flat(doc, ctx, DDL_PROFILE)


def _parse_dml(doc: dict[str, Any], ctx: ParseContext) -> Parsed:
    kind = req_str(doc, "TYPE")
    op = _OPS.get(kind.strip())
    if op is None:
        raise RejectError(UNSUPPORTED, f"unknown TYPE {kind[:40]!r} (expected I, U or D)")
    binlog_name = req_str(doc, "BINLOG_NAME")
    binlog_pos = req_int(doc, "BINLOG_POS")
    if not 0 <= binlog_pos <= INT64_MAX:
        raise RejectError(BAD_FIELD, f"field 'BINLOG_POS' must be a 64-bit position, got {binlog_pos}")
    database = req_str(doc, "DATABASE")
    table = blank_to_none(req_str(doc, "TABLE"))
    if table is None:
        raise RejectError(MISSING_FIELD, "required field 'TABLE' is empty")
    new_raw = opt_obj(doc, "NEW_VALUES")
    old_raw = opt_obj(doc, "OLD_VALUES")
    before: Image | None = None
    after: Image | None = None
    changed: list[str] | None = None
    if op == "INSERT":
        _forbid(old_raw, "OLD_VALUES", kind)
        after = UNTYPED.convert(_need(new_raw, "NEW_VALUES", kind), "NEW_VALUES")
    elif op == "DELETE":
        _forbid(new_raw, "NEW_VALUES", kind)
        before = UNTYPED.convert(_need(old_raw, "OLD_VALUES", kind), "OLD_VALUES")
    else:
        after = UNTYPED.convert(_need(new_raw, "NEW_VALUES", kind), "NEW_VALUES")
        before = UNTYPED.convert(_need(old_raw, "OLD_VALUES", kind), "OLD_VALUES")
        # Only columns present in both images can be judged; one missing from
        # OLD_VALUES is unknown, not changed.
        changed = [name for name, value in after.items() if name in before and not _same(before[name], value)]
    source = Source(
        format=FORMAT_ID,
        db_type="MYSQL",
        database=blank_to_none(database),
        schema=None,
        table=table,
        binlog_file=binlog_name,
        binlog_pos=binlog_pos,
        gtid=blank_to_none(opt_str(doc, "GLOBAL_ID")),
    )
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=kafka_order_key(ctx),
        ts_ms=_time_ms(doc, ctx),
        ingest_ts_ms=None,
        primary_key=[],  # format one names no key columns
        columns=UNTYPED.columns_for(after, before),
        before=before,
        after=after,
        changed_columns=changed,
        ddl=None,
        origin=origin(ctx, 0),
    )
    return Parsed([event])


def _need(image: dict[str, Any] | None, key: str, kind: str) -> dict[str, Any]:
    if image is None:
        raise RejectError(MISSING_FIELD, f"TYPE {kind} message has no {key} row image")
    return image


def _forbid(image: dict[str, Any] | None, key: str, kind: str) -> None:
    # The format documents this image as null for the type; values there would
    # be silently dropped, so such a message is dead-lettered instead.
    if image:
        raise RejectError(INCONSISTENT, f"TYPE {kind} message has a non-empty {key}, documented as null for this type")


def _time_ms(doc: dict[str, Any], ctx: ParseContext) -> int | None:
    text = opt_str(doc, "TIME")
    if text is None or text == "":
        return None
    try:
        return temporal.compact_local_to_ms(text.strip(), ctx.source_timezone)
    except (ValueError, OverflowError) as exc:
        raise RejectError(BAD_FIELD, f"field 'TIME': {value_problem(exc, text)}") from None


def _same(a: Value, b: Value) -> bool:
    """Equal values of the same kind (so "1" differs from 1 and 1.0 from 1.00)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, Decimal):
        return str(a) == str(b)
    return a == b
