"""``oms-avro``: OceanBase OMS "Avro", the Alibaba DTS ``Record`` in plain Avro binary.

A message is one ``Record`` (``dts_record.avsc``, copied from the DTS schema)
with no container header and no schema id. Newer DTS releases append one field,
``bornTimestamp`` (long, ms), at the end of the record. Avro binary is a plain
concatenation of the fields in schema order, so such a message is exactly a
base-schema record followed by one zig-zag varint: the parser decodes the base
record and, when bytes remain, reads them as that long, which must end exactly
at the last byte. One decode serves both variants, and a truncated message or
trailing garbage cannot pass for either (``MALFORMED``).

Mapping: ``operation`` INSERT/UPDATE/DELETE, INIT (full load) -> SNAPSHOT, DDL
(SQL text in ``afterImages``), HEARTBEAT -> heartbeat, BEGIN/COMMIT/ROLLBACK and
the other DTS control operations -> no event. ``objectName`` is ``db.table`` or
``db.schema.table``, a dot inside a name escaped as the text ``\\u002E``; a
one-part name is the table of a row change, and the database of a DDL (DTS's
DDL records name the database the statement ran in). Images are positional,
parallel to ``fields``; each item is converted by its record type (see
``values.py``), and the column's logical type comes from its MySQL type code,
refined by the value where the code is ambiguous (BLOB/TEXT share 252,
VARCHAR/VARBINARY share 15/253/254). ``tags.pk_uk_info`` ``{"PRIMARY": [...]}``
gives the primary key (unique keys are not primary keys and are not used).
UPDATE images are full rows; DTS does not say which columns changed, so
``changed_columns`` is null.

Order key: the input's Kafka order: major = input partition, minor = input
offset, row 0 (one Record is one row). ``id`` is not a log position: it is a
time in ms * 10^5 + a counter of one sync process (in the seed's samples that
time is within a second of ``processTimestamps``, OMS's delivery, and up to two
minutes after ``sourceTimestamp``, the change), 0 on every
full-load record, and ``sourcePosition`` is a checkpoint in whole seconds.
Before this release the key was ``id``, which follows OMS's delivery order
within one sync process only; Kafka order is that delivery order, and does not
go back when another sync process (or host clock) takes over. ``id`` stays in
``source.sequence``. Keys compare only within one input partition: OMS's
partition rules "Hash" (by primary key value), "Table" and "One" each keep a
row's changes in one partition; "Table" and "One" also keep a TRUNCATE or
table-dropping DDL with the rows it applies to.
``ts_ms`` = ``sourceTimestamp`` (seconds) * 1000; ``ingest_ts_ms`` =
``processTimestamps[0]`` (OMS: the delivery time), else ``bornTimestamp``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import json
from importlib import resources
from typing import Any, Final

import fastavro
import orjson
from fastavro.types import Schema

from binlake.services.oms_avro.values import (
    BLOB_CODES,
    STRING_CODES,
    TYPE_CODES,
    Absent,
    convert,
)
from binlake.shared.event.model import ChangeEvent, Column, Columns, Op, Source
from binlake.shared.event.values import INT64_MAX, INT64_MIN, BigInt, Image, SqlTime, Value
from binlake.shared.kernel._kernel import AvroDecoder
from binlake.shared.parsing.common import blank_to_none, ddl_event, origin
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    BAD_VALUE,
    INCONSISTENT,
    MALFORMED,
    MISSING_FIELD,
    UNSUPPORTED,
    WRONG_FORMAT,
    RejectError,
    value_problem,
)
from binlake.shared.parsing.order import kafka_order_key
from binlake.shared.parsing.result import Heartbeat, Parsed
from binlake.shared.parsing.rows import require_key_columns

FORMAT_ID: Final = "oms-avro"
PARSER_VERSION: Final = "1"

SCHEMA_FILE: Final = "dts_record.avsc"
RECORD_VERSION: Final = 1
_ESCAPED_DOT: Final = ("\\u002E", "\\u002e")

_ROW_OPS: Final[dict[str, Op]] = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT"}
_CACHE_LIMIT: Final = 4096
_PRIMARY_KEYS: dict[str, tuple[str, ...]] = {}
"""``pk_uk_info`` texts read, by text."""
_COLUMNS: dict[tuple[Any, ...], Columns] = {}
"""Column descriptors by table shape (``_columns``)."""
_SETTLED_CODES: Final = frozenset(
    code
    for code, (_, logical) in TYPE_CODES.items()
    if logical not in ("unknown", "decimal") and code not in STRING_CODES and code not in BLOB_CODES
)
"""Type codes whose column descriptor no value changes."""
_CONTROL_OPS: Final = {
    "BEGIN": "transaction_begin",
    "COMMIT": "transaction_commit",
    "ROLLBACK": "transaction_rollback",
    "ABORT": "transaction_abort",
    "CHECKPOINT": "checkpoint",
    "COMMAND": "command",
    "FILL": "fill",
    "FINISH": "finish",
    "CONTROL": "control",
    "RDB": "rdb",
    "NOOP": "noop",
}


# ------------------------------------------------------------------ schema


def schema_json(with_born_timestamp: bool = False) -> list[dict[str, Any]]:
    """The DTS schema (named types, then ``Record``); optionally with the trailing ``bornTimestamp``."""
    text = resources.files("binlake.services.oms_avro").joinpath(SCHEMA_FILE).read_text("utf-8")
    types: list[dict[str, Any]] = json.loads(text)
    if with_born_timestamp:
        types[-1]["fields"].append({"name": "bornTimestamp", "type": "long", "default": 0})
    return types


def parsed_schema(with_born_timestamp: bool = False) -> Schema:
    """The parsed ``Record`` schema, its named types resolved (for fastavro readers and writers)."""
    return _parsed_schema(with_born_timestamp)


@functools.cache
def _parsed_schema(with_born_timestamp: bool) -> Schema:
    types = schema_json(with_born_timestamp)
    named: dict[str, Any] = {}
    for named_type in types[:-1]:
        fastavro.parse_schema(named_type, named_schemas=named)
    return fastavro.parse_schema(types[-1], named_schemas=named)


@functools.cache
def _decoder() -> AvroDecoder:
    """The kernel's decoder of the base ``Record`` (as fastavro's ``schemaless_reader`` reads it)."""
    return AvroDecoder(json.dumps(parsed_schema()))


# ------------------------------------------------------------------ decoding


def _read_long(data: bytes, start: int) -> tuple[int, int]:
    """A zig-zag varint long at ``start``: (value, end)."""
    shift = 0
    accum = 0
    pos = start
    while True:
        if pos >= len(data) or shift > 63:
            raise RejectError(MALFORMED, f"{len(data) - start} trailing byte(s) after the Record are not a long")
        byte = data[pos]
        pos += 1
        accum |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            value = (accum >> 1) ^ -(accum & 1)
            if not INT64_MIN <= value <= INT64_MAX:
                raise RejectError(MALFORMED, "trailing bytes after the Record hold a number beyond a long")
            return value, pos


def decode(raw: bytes) -> tuple[dict[str, Any], int | None]:
    """The Record and its ``bornTimestamp`` (None for the base schema)."""
    if raw.lstrip()[:1] in (b"{", b"["):
        try:
            orjson.loads(raw)
        except orjson.JSONDecodeError:
            pass
        else:
            raise RejectError(WRONG_FORMAT, "a JSON message: OMS Avro messages are Avro binary (DTS Record)")
    try:
        decoded, end = _decoder().decode(raw)
    except ValueError as exc:  # the problem and its byte offset, never the bytes
        raise RejectError(MALFORMED, f"not a DTS Record in Avro binary ({exc})") from None
    record: dict[str, Any] = decoded
    if end == len(raw):
        return record, None
    born, end = _read_long(raw, end)
    if end != len(raw):
        raise RejectError(MALFORMED, f"{len(raw) - end} byte(s) left after the Record and its bornTimestamp")
    return record, born


# ------------------------------------------------------------------ mapping


def _object_name(text: str | None) -> list[str | None]:
    if not text:
        return []
    parts = text.split(".")
    if len(parts) > 3:
        raise RejectError(BAD_FIELD, f"objectName {text[:120]!r} has more than three dot-separated parts")
    out: list[str | None] = []
    for part in parts:
        for escaped in _ESCAPED_DOT:
            part = part.replace(escaped, ".")
        out.append(blank_to_none(part))
    return out


def _db_type(source: dict[str, Any]) -> str:
    kind: str = source["sourceType"]
    version: str = source["version"]
    if version.upper().startswith("OB"):
        return "OB_" + version[2:].upper()  # OBMySQL -> OB_MYSQL, OBOracle -> OB_ORACLE
    return kind.upper()


def _primary_key(tags: dict[str, str]) -> list[str]:
    text = tags.get("pk_uk_info")
    if not text:
        return []
    known = _PRIMARY_KEYS.get(text)  # a table's records repeat the same text: read once
    if known is not None:
        return list(known)
    try:
        info = json.loads(text)
    except ValueError:
        raise RejectError(BAD_FIELD, f"tags.pk_uk_info is not JSON: {text[:80]!r}") from None
    if not isinstance(info, dict):
        raise RejectError(BAD_FIELD, "tags.pk_uk_info must be a JSON object {key name: [columns]}")
    primary = info.get("PRIMARY")
    if primary is None:
        return []
    if not isinstance(primary, list) or not all(isinstance(name, str) for name in primary):
        raise RejectError(BAD_FIELD, "tags.pk_uk_info PRIMARY must be an array of column names")
    if len(_PRIMARY_KEYS) >= _CACHE_LIMIT:
        _PRIMARY_KEYS.clear()
    _PRIMARY_KEYS[text] = tuple(primary)
    return primary


def _fields(record: dict[str, Any], op: str) -> list[tuple[str, int]]:
    fields = record["fields"]
    if fields is None:
        raise RejectError(MISSING_FIELD, f"{op} record has no 'fields'")
    if isinstance(fields, str):
        raise RejectError(BAD_FIELD, f"{op} record has 'fields' as a string; expected the array of columns")
    return [(field["name"], field["dataTypeNumber"]) for field in fields]


def _image(
    items: Any, key: str, fields: list[tuple[str, int]], zone: _dt.tzinfo
) -> tuple[Image, dict[str, Any]] | None:
    """(typed image, raw item per present column), or None when the image is absent."""
    if items is None:
        return None
    if isinstance(items, str):
        raise RejectError(BAD_FIELD, f"{key} is a string (DDL text) in a row change")
    if len(items) != len(fields):
        raise RejectError(INCONSISTENT, f"{key} has {len(items)} values for {len(fields)} fields")
    image: Image = {}
    raw: dict[str, Any] = {}
    for (name, code), item in zip(fields, items, strict=True):
        try:
            value = convert(item, code, zone)
        except (ValueError, OverflowError) as exc:
            problem = value_problem(exc, _item_value(item))  # never the value itself: no row data
            raise RejectError(BAD_VALUE, f"{key} column {name!r} (type code {code}): {problem}") from None
        if isinstance(value, Absent):
            continue
        image[name] = value
        raw[name] = item
    return image, raw


def _item_value(item: Any) -> Any:
    """An image item's payload, for describing it: (record name, {"value": ...}) -> the value."""
    fields = item[1] if isinstance(item, tuple) and len(item) == 2 else item
    return fields.get("value", fields) if isinstance(fields, dict) else fields


def _inferred_logical(value: Value) -> str:
    if isinstance(value, BigInt):
        return "integer"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, SqlTime):
        return "time"
    if isinstance(value, _dt.datetime):
        return "datetime" if value.tzinfo is None else "timestamp"
    if isinstance(value, _dt.date):
        return "date"
    if isinstance(value, str):
        return "string"
    return "decimal" if value is not None else "unknown"


def _columns(fields: list[tuple[str, int]], images: list[tuple[Image, dict[str, Any]]]) -> list[Column]:
    """The column descriptors, built once per table shape and shared (a ``Columns``, whose Avro the encoder
    keeps): the shape is the fields, and what the values say of the columns whose type code leaves it open."""
    refined = tuple([_descriptor(name, code, images) for name, code in fields if code not in _SETTLED_CODES])
    key = (tuple(fields), refined)
    columns = _COLUMNS.get(key)
    if columns is None:
        columns = Columns(Column(name, f"mysql:{code}", *_descriptor(name, code, images)) for name, code in fields)
        if len(_COLUMNS) >= _CACHE_LIMIT:
            _COLUMNS.clear()
        _COLUMNS[key] = columns
    return columns


def _descriptor(
    name: str, code: int, images: list[tuple[Image, dict[str, Any]]]
) -> tuple[str, int | None, int | None, bool]:
    """(logical type, precision, scale, inferred) of a column, from its type code refined by its first
    non-null value across the images."""
    logical = TYPE_CODES[code][1] if code in TYPE_CODES else "unknown"
    if code in _SETTLED_CODES:
        return logical, None, None, False
    value: Value = None
    item: Any = None
    for image, raw in images:
        if image.get(name) is not None:
            value, item = image[name], raw[name]
            break
    precision = scale = None
    inferred = False
    if logical == "unknown" and value is not None:
        logical, inferred = _inferred_logical(value), True
    elif code in STRING_CODES and isinstance(value, bytes):
        logical = "bytes"  # BINARY / VARBINARY (Character in the binary charset)
    elif code in BLOB_CODES and isinstance(value, str):
        logical = "string"  # TEXT types share the BLOB codes
    if logical == "decimal" and item is not None and item[0].endswith(".Decimal"):
        precision, scale = item[1]["precision"], item[1]["scale"]
    return logical, precision, scale, inferred


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    record, born = decode(raw)
    if record["version"] != RECORD_VERSION:
        raise RejectError(UNSUPPORTED, f"DTS Record version {record['version']}; only {RECORD_VERSION} is known")
    operation: str = record["operation"]
    ts_ms = record["sourceTimestamp"] * 1000
    stamps = record["processTimestamps"] or []
    ingest_ts_ms = stamps[0] if stamps else born
    names = _object_name(record["objectName"])
    is_ddl = operation == "DDL"
    if len(names) == 1:
        names = [names[0], None, None] if is_ddl else [None, None, names[0]]
    elif len(names) == 2:
        names = [names[0], None, names[1]]
    database, schema, table = names if names else [None, None, None]
    source = Source(
        format=FORMAT_ID,
        db_type=_db_type(record["source"]),
        database=database,
        schema=schema,
        table=table,
        checkpoint=blank_to_none(record["sourcePosition"]) or blank_to_none(record["safeSourcePosition"]),
        transaction_id=blank_to_none(record["sourceTxid"]),
        sequence=str(record["id"]),
    )
    if operation == "HEARTBEAT":
        name = f"{database}.{table}" if database and table else None
        return Parsed([], heartbeats=[Heartbeat(ts_ms, name)], control="heartbeat")
    control = _CONTROL_OPS.get(operation)
    if control is not None:
        return Parsed([], control=control)
    key = kafka_order_key(ctx)
    if is_ddl:
        sql = record["afterImages"]
        if not isinstance(sql, str) or not sql:
            raise RejectError(MISSING_FIELD, "DDL record has no SQL text in afterImages")
        return Parsed(
            [
                ddl_event(
                    source, sql=sql, vendor_type=None, order_key=key, ts_ms=ts_ms, ingest_ts_ms=ingest_ts_ms, ctx=ctx
                )
            ]
        )
    op = _ROW_OPS.get(operation)
    if op is None:
        raise RejectError(UNSUPPORTED, f"operation {operation!r} is not handled")
    if table is None:
        raise RejectError(MISSING_FIELD, f"{operation} record has no table in objectName")
    fields = _fields(record, operation)
    primary_key = _primary_key(record["tags"])
    before = _image(record["beforeImages"], "beforeImages", fields, ctx.source_timezone)
    after = _image(record["afterImages"], "afterImages", fields, ctx.source_timezone)
    if op == "DELETE":
        if before is None:
            raise RejectError(MISSING_FIELD, "DELETE record has no beforeImages")
        if after is not None:
            raise RejectError(INCONSISTENT, "DELETE record carries afterImages")
        require_key_columns(primary_key, before[0], "deleted row")
    else:
        if after is None:
            raise RejectError(MISSING_FIELD, f"{operation} record has no afterImages")
        if op != "UPDATE" and before is not None:
            raise RejectError(INCONSISTENT, f"{operation} record carries beforeImages")
        require_key_columns(primary_key, (before or after)[0], "prior row" if before else "new row")
    present = [image for image in (after, before) if image is not None]
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=key,
        ts_ms=ts_ms,
        ingest_ts_ms=ingest_ts_ms,
        primary_key=primary_key,
        columns=_columns(fields, present),
        before=None if before is None else before[0],
        after=None if after is None else after[0],
        changed_columns=None,
        ddl=None,
        origin=origin(ctx),
    )
    return Parsed([event])
