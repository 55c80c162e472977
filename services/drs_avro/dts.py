"""The DTS-like DRS Avro record: one row change with self-typed column values.

Field names are matched case-insensitively (the caller lowers the record's
keys); see docs/formats/drs-avro.md for the table. In short:

- ``operation`` / ``opType``: INSERT, UPDATE, DELETE, INIT (op SNAPSHOT), DDL;
  HEARTBEAT is a heartbeat; BEGIN, COMMIT, ROLLBACK, ABORT are transaction
  markers; CHECKPOINT, COMMAND, FILL, FINISH, CONTROL, RDB, NOOP are other
  control records. Markers produce no event and are reported as ``control``.
- ``id``: the event sequence (order key major; ``source.sequence``).
- ``sourceTimestamp``: ``ts_ms`` (seconds or milliseconds, read from the size);
  ``ts``: ``ingest_ts_ms`` when present.
- ``source.sourceType``: ``db_type`` (upper case); ``sourcePosition``:
  ``source.checkpoint``; ``sourceTxid``: ``source.transaction_id``.
- ``objectName``: ``db.table``, ``db.schema.table``; Oracle ``schema.table``.
  Explicit ``database``/``dbName``, ``schema``/``schemaName``,
  ``table``/``tableName`` fields win over it.
- ``fields``: ``[{name, dataTypeNumber}]`` (a type text in ``typeName`` /
  ``dataType`` is used when present); ``beforeImages`` / ``afterImages``: the
  values in ``fields`` order, each a DTS value record (Integer, Character,
  Decimal, Float, Timestamp, DateTime, TimestampWithTimeZone, Binary/Text
  Geometry and Object, EmptyObject) or a plain Avro value. For DDL the SQL is
  ``afterImages`` (or ``beforeImages``, ``sql``) as a string.
- Primary key: ``pkNames`` / ``primaryKeys``, else ``tags["pk_uk_info"]``
  (DTS: ``{"PRIMARY": ["id"]}``), else none.
- EmptyObject ``NULL`` is SQL NULL; ``NONE`` means "no value in this image":
  the column is left out (unknown). A ``millis`` field below 1000 is
  milliseconds; a value of 1000 or more cannot be, and is read as
  microseconds (DTS writers put sub-millisecond fractions there).
"""

from __future__ import annotations

import codecs
import datetime as _dt
import re
import uuid
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, Final

import orjson

from binlake.services.drs_json.parser import dialect_of
from binlake.shared.event.model import ChangeEvent, Column, Op, Source
from binlake.shared.event.values import INT64_MAX, INT64_MIN, Image, SqlTime, Unparsed, Value, integer
from binlake.shared.parsing.common import blank_to_none, ddl_event, epoch_ms, origin
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.errors import (
    BAD_FIELD,
    BAD_VALUE,
    INCONSISTENT,
    MISSING_FIELD,
    UNSUPPORTED,
    RejectError,
    UnreadableValue,
    describe,
    value_problem,
)
from binlake.shared.parsing.order import order_key
from binlake.shared.parsing.result import Heartbeat, Parsed
from binlake.shared.parsing.rows import require_key_columns
from binlake.shared.parsing.sqltypes import sql_type
from binlake.shared.parsing.temporal import EPOCH, UTC

_ROW_OPS: Final[dict[str, Op]] = {"INSERT": "INSERT", "UPDATE": "UPDATE", "DELETE": "DELETE", "INIT": "SNAPSHOT"}
_CONTROL: Final = {
    "BEGIN": "transaction_begin", "COMMIT": "transaction_commit", "ROLLBACK": "transaction_rollback",
    "ABORT": "transaction_rollback", "CHECKPOINT": "checkpoint", "COMMAND": "command", "FILL": "fill",
    "FINISH": "finish", "CONTROL": "control", "RDB": "rdb", "NOOP": "noop",
}  # fmt: skip
_SCHEMA_DBS: Final = frozenset({"ORACLE"})
"""Sources whose two-part object names are ``schema.table``."""

# MySQL binlog column type codes (DTS ``dataTypeNumber`` for MySQL sources) to the
# logical type a NULL-only column gets; codes shared by text and binary types
# (BLOB/TEXT, VARCHAR/VARBINARY, CHAR/BINARY) stay unknown until a value shows it.
_MYSQL_NULL_LOGICAL: Final = {
    0: "decimal", 1: "integer", 2: "integer", 3: "integer", 4: "float32", 5: "float64", 7: "timestamp",
    8: "integer", 9: "integer", 10: "date", 11: "time", 12: "datetime", 13: "year", 14: "date", 16: "bit",
    17: "timestamp", 18: "datetime", 19: "time", 245: "json", 246: "decimal", 247: "enum", 248: "set",
    255: "geometry",
}  # fmt: skip
_CHARSETS: Final = {
    "utf8mb4": "utf-8", "utf8mb3": "utf-8", "utf8": "utf-8", "ucs2": "utf-16-be", "utf16": "utf-16-be",
    "utf16le": "utf-16-le", "utf32": "utf-32-be", "ujis": "euc_jp", "euckr": "euc_kr", "koi8r": "koi8_r",
    "sjis": "shift_jis", "eucjpms": "euc_jp",
}  # fmt: skip
_PK_EXAMPLE: Final = '{"PRIMARY": ["id"]}'
_BINARY_CHARSETS: Final = frozenset({"binary", ""})
_OFFSET_RE: Final = re.compile(r"^(?:GMT|UTC)?([+-])(\d{1,2}):?(\d{2})?$")
_CONVERSION_ERRORS: Final = (ValueError, TypeError, ArithmeticError, KeyError, LookupError)


class _Absent:
    """EmptyObject NONE: the image holds no value for the column."""


ABSENT: Final = _Absent()


def parse_dts_record(rec: dict[str, Any], ctx: ParseContext, format_id: str) -> Parsed:
    """Events from one DTS-like record whose top-level keys are lower-cased."""
    op_name = _symbol(rec.get("operation") if rec.get("operation") is not None else rec.get("optype"), "operation")
    op_name = op_name.upper()
    source_ts = _opt_long(rec, "sourcetimestamp")
    ts_ms = None if source_ts is None else epoch_ms(source_ts)
    ingest = _opt_long(rec, "ts")
    ingest_ms = None if ingest is None else epoch_ms(ingest)
    info = _lowered(_unwrap(rec.get("source")), "source")
    db_type = blank_to_none((_opt_symbol(info.get("sourcetype"), "source.sourceType") or "").upper())
    if db_type is None:
        db_type = blank_to_none((_opt_symbol(rec.get("dbtype"), "dbType") or "").upper())
    database, schema, table = _names(rec, db_type)
    if op_name == "HEARTBEAT":
        if ts_ms is None:
            raise RejectError(MISSING_FIELD, "HEARTBEAT record has no 'sourceTimestamp'")
        named = ".".join(part for part in (database or schema, table) if part) or None
        return Parsed([], heartbeats=[Heartbeat(ts_ms, named)], control="heartbeat")
    if op_name in _CONTROL:
        return Parsed([], control=_CONTROL[op_name])
    seq = _opt_long(rec, "id")
    if seq is None:
        raise RejectError(MISSING_FIELD, "required field 'id' (the DRS event sequence) is missing or null")
    source = Source(
        format=format_id,
        db_type=db_type,
        database=database,
        schema=schema,
        table=table,
        checkpoint=blank_to_none(_opt_text(rec, "sourceposition")),
        transaction_id=blank_to_none(_opt_text(rec, "sourcetxid")),
        sequence=str(seq),
    )
    key = order_key(seq, ctx.offset, 0)  # the offset decides only between records sharing an id
    if op_name == "DDL":
        return Parsed([_ddl(rec, source, key, (ts_ms, ingest_ms), ctx)])
    op = _ROW_OPS.get(op_name)
    if op is None:
        raise RejectError(UNSUPPORTED, f"unknown operation {op_name!r}")
    if table is None:
        raise RejectError(MISSING_FIELD, f"{op_name} record names no table ('objectName' or 'table')")
    fields = _fields(rec.get("fields"))
    before = after = None
    raw_before: list[Any] | None = None
    raw_after: list[Any] | None = None
    if op in ("UPDATE", "DELETE"):
        raw_before = _image_list(rec, "beforeimages", op_name, len(fields))
    if op != "DELETE":
        raw_after = _image_list(rec, "afterimages", op_name, len(fields))
    logical: dict[str, tuple[str, int | None, int | None]] = {}
    if raw_before is not None:
        before = _image(raw_before, fields, "beforeImages", logical)
    if raw_after is not None:
        after = _image(raw_after, fields, "afterImages", logical)
    primary_key = _primary_key(rec)
    require_key_columns(
        primary_key, before if op == "DELETE" else after, "deleted row" if op == "DELETE" else "new row"
    )
    changed: list[str] | None = None
    if op == "UPDATE" and before is not None and after is not None and raw_before is not None and raw_after is not None:
        changed = [
            name
            for index, (name, _, _) in enumerate(fields)
            if name in before and name in after and raw_before[index] != raw_after[index]
        ]
    event = ChangeEvent(
        op=op,
        source=source,
        order_key=key,
        ts_ms=ts_ms,
        ingest_ts_ms=ingest_ms,
        primary_key=primary_key,
        columns=_columns(fields, logical, db_type),
        before=before,
        after=after,
        changed_columns=changed,
        ddl=None,
        origin=origin(ctx, 0),
    )
    return Parsed([event])


# --------------------------------------------------------------- envelope


def _unwrap(value: Any) -> Any:
    """The value of a named union branch, which fastavro returns as (name, value)."""
    while isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        value = value[1]
    return value


def _lowered(value: Any, what: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RejectError(BAD_FIELD, f"field {what!r} must be a record")
    return {str(key).lower(): item for key, item in value.items()}


def _symbol(value: Any, what: str) -> str:
    text = _opt_symbol(value, what)
    if text is None:
        raise RejectError(MISSING_FIELD, f"required field {what!r} is missing or null")
    return text


def _opt_symbol(value: Any, what: str) -> str | None:
    value = _unwrap(value)
    if value is None or isinstance(value, str):
        return value
    raise RejectError(BAD_FIELD, f"field {what!r} must be an enum symbol or a string")


def _opt_text(rec: dict[str, Any], key: str) -> str | None:
    value = _unwrap(rec.get(key))
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise RejectError(BAD_FIELD, f"field {key!r} must be a string")


def _opt_long(rec: dict[str, Any], key: str) -> int | None:
    value = _unwrap(rec.get(key))
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().isdecimal():  # isdecimal: what int() reads
        return int(value.strip())
    raise RejectError(BAD_FIELD, f"field {key!r} must be an integer, got {value!r:.60}")


def _names(rec: dict[str, Any], db_type: str | None) -> tuple[str | None, str | None, str | None]:
    """(database, schema, table) from explicit fields or ``objectName``."""
    database = schema = table = None
    object_name = blank_to_none(_opt_text(rec, "objectname"))
    if object_name is not None:
        parts = object_name.split(".")
        if len(parts) >= 3:
            database, schema, table = parts[0], parts[1], ".".join(parts[2:])
        elif db_type in _SCHEMA_DBS:
            schema, table = (parts[0], parts[1]) if len(parts) == 2 else (parts[0], None)
        else:
            database, table = (parts[0], parts[1]) if len(parts) == 2 else (parts[0], None)
    database = blank_to_none(_opt_text(rec, "database") or _opt_text(rec, "dbname")) or database
    schema = blank_to_none(_opt_text(rec, "schema") or _opt_text(rec, "schemaname")) or schema
    table = blank_to_none(_opt_text(rec, "table") or _opt_text(rec, "tablename")) or table
    return database, schema, table


def _ddl(
    rec: dict[str, Any], source: Source, key: str, times: tuple[int | None, int | None], ctx: ParseContext
) -> ChangeEvent:
    for name in ("afterimages", "beforeimages", "sql", "ddl"):
        value = _unwrap(rec.get(name))
        if isinstance(value, str) and value.strip():
            return ddl_event(
                source, sql=value, vendor_type="DDL", order_key=key, ts_ms=times[0], ingest_ts_ms=times[1], ctx=ctx
            )
    raise RejectError(MISSING_FIELD, "DDL record has no SQL text in 'afterImages', 'beforeImages' or 'sql'")


def _fields(value: Any) -> list[tuple[str, int | None, str | None]]:
    """(name, dataTypeNumber, type text) per column, in image order."""
    value = _unwrap(value)
    if not isinstance(value, list):
        raise RejectError(MISSING_FIELD, "row record has no 'fields' array naming its columns")
    out = []
    for index, item in enumerate(value):
        field = _lowered(_unwrap(item), f"fields[{index}]")
        name = _unwrap(field.get("name"))
        if not isinstance(name, str) or not name:
            raise RejectError(BAD_FIELD, f"fields[{index}] has no 'name'")
        code = _unwrap(field.get("datatypenumber"))
        if code is not None and (isinstance(code, bool) or not isinstance(code, int)):
            raise RejectError(BAD_FIELD, f"fields[{index}].dataTypeNumber must be an integer")
        text = next(
            (t for t in (_unwrap(field.get(k)) for k in ("typename", "datatype", "type")) if isinstance(t, str) and t),
            None,
        )
        out.append((name, code, text))
    return out


def _image_list(rec: dict[str, Any], key: str, op_name: str, width: int) -> list[Any]:
    value = _unwrap(rec.get(key))
    label = "beforeImages" if key == "beforeimages" else "afterImages"
    if value is None:
        raise RejectError(MISSING_FIELD, f"{op_name} record has no {label!r}")
    if not isinstance(value, list):
        raise RejectError(BAD_FIELD, f"{label!r} of a {op_name} record must be an array of column values")
    if len(value) != width:
        raise RejectError(INCONSISTENT, f"{label!r} holds {len(value)} value(s) but 'fields' names {width} column(s)")
    return value


def _primary_key(rec: dict[str, Any]) -> list[str]:
    for key in ("pknames", "primarykeys"):
        value = _unwrap(rec.get(key))
        if value is not None:
            if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
                raise RejectError(BAD_FIELD, f"field {key!r} must be an array of strings")
            return value
    tags = _unwrap(rec.get("tags"))
    info = tags.get("pk_uk_info") if isinstance(tags, dict) else None
    if info is None:
        return []
    try:
        loaded = orjson.loads(info) if isinstance(info, str) else None
    except orjson.JSONDecodeError:
        loaded = None
    primary = loaded.get("PRIMARY") if isinstance(loaded, dict) else None
    if not isinstance(primary, list) or not all(isinstance(item, str) for item in primary):
        raise RejectError(
            BAD_FIELD, f'tags[\'pk_uk_info\'] must be JSON such as {{"PRIMARY": ["id"]}}, got {info!r:.80}'
        )
    return primary


def _columns(
    fields: list[tuple[str, int | None, str | None]],
    logical: dict[str, tuple[str, int | None, int | None]],
    db_type: str | None,
) -> list[Column]:
    columns = []
    for name, code, text in fields:
        if text is not None:
            declared = sql_type(text, dialect_of(db_type))
            kind, precision, scale = declared.logical, declared.precision, declared.scale
        elif name in logical:
            kind, precision, scale = logical[name]
        else:
            mysql = db_type in (None, "MYSQL") and code is not None
            kind = _MYSQL_NULL_LOGICAL.get(code, "unknown") if mysql and code is not None else "unknown"
            precision = scale = None
        source_type = text if text is not None else (None if code is None else str(code))
        columns.append(Column(name, source_type, kind, precision, scale, source_type is None))
    return columns


# ----------------------------------------------------------------- values


def _image(
    items: list[Any],
    fields: list[tuple[str, int | None, str | None]],
    what: str,
    logical: dict[str, tuple[str, int | None, int | None]],
) -> Image:
    image: Image = {}
    for (name, code, _), item in zip(fields, items, strict=True):
        try:
            value, kind, precision, scale = _value(item, code)
        except RejectError:
            raise
        except _CONVERSION_ERRORS as exc:
            problem = value_problem(exc, _unwrap(item))  # never the value itself: no row data
            raise RejectError(BAD_VALUE, f"{what} column {name!r}: {problem}") from None
        if isinstance(value, _Absent):
            continue
        image[name] = value
        if value is not None and name not in logical:
            logical[name] = (kind, precision, scale)
    return image


Converted = tuple[Value | _Absent, str, int | None, int | None]


def _value(item: Any, code: int | None) -> Converted:
    """One DTS value (a named union branch or a record) or plain Avro value."""
    kind: str | None = None
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
        kind, item = item[0].rsplit(".", 1)[-1].lower(), item[1]
    if isinstance(item, dict):
        payload = {str(key).lower(): _unwrap(value) for key, value in item.items()}
        if kind not in _RECORDS:
            kind = _structural_kind(payload)
        return _RECORDS[kind](payload, code)
    if kind == "emptyobject":
        if item == "NONE":
            return ABSENT, "unknown", None, None
        if item == "NULL":
            return None, "unknown", None, None
        raise UnreadableValue(f"unknown EmptyObject symbol: {describe(item)}")
    return _primitive(item)


def _structural_kind(payload: dict[str, Any]) -> str:
    keys = payload.keys()
    value = payload.get("value")
    if "charset" in keys:
        return "character"
    if "timestamp" in keys:
        return "timestamp"
    if "timezone" in keys:
        return "timestampwithtimezone"
    if "year" in keys or "hour" in keys:
        return "datetime"
    if "precision" in keys and "scale" in keys:
        return "float" if isinstance(value, float) else "decimal"
    if "precision" in keys:
        return "integer"
    if "type" in keys:
        return "binaryobject" if isinstance(value, bytes) else "textobject"
    raise UnreadableValue(f"unrecognized value record with fields {sorted(keys)}")


def _int_value(payload: dict[str, Any], code: int | None) -> Converted:
    raw = payload["value"]
    try:
        number = int(raw.strip()) if isinstance(raw, str) else raw
    except ValueError:  # int()'s own message quotes the text
        number = None
    if isinstance(number, bool) or not isinstance(number, int):
        raise UnreadableValue(f"expected an integer, got {describe(raw)}")
    kind = {13: "year", 16: "bit"}.get(-1 if code is None else code, "integer")
    return integer(number), kind, None, None


def _character(payload: dict[str, Any], code: int | None) -> Converted:
    raw = payload["value"]
    charset = str(payload.get("charset") or "").strip().lower()
    if isinstance(raw, str):
        data = raw
    elif isinstance(raw, bytes):
        if charset in _BINARY_CHARSETS:
            return raw, "bytes", None, None
        try:
            codec: str = codecs.lookup(_CHARSETS.get(charset, charset)).name
        except LookupError:
            raise UnreadableValue(f"unknown character set {charset[:40]!r}") from None  # schema, not row data
        try:
            data = raw.decode(codec)
        except UnicodeDecodeError as exc:  # its message quotes a byte of the value
            raise UnreadableValue(f"bytes are not valid {codec}: {exc.reason} at byte {exc.start}") from None
    else:
        raise UnreadableValue(f"expected bytes, got {describe(raw)}")
    kind = {245: "json", 247: "enum", 248: "set"}.get(-1 if code is None else code, "string")
    return data, kind, None, None


def _decimal(payload: dict[str, Any], code: int | None) -> Converted:
    raw = payload["value"]
    try:
        number = Decimal(raw.strip()) if isinstance(raw, str) else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise UnreadableValue(f"expected a finite decimal number, got {describe(raw)}")
    precision = payload.get("precision")
    scale = payload.get("scale")
    return (
        number,
        "decimal",
        precision if isinstance(precision, int) and precision > 0 else None,
        scale if isinstance(scale, int) and scale >= 0 else None,
    )


def _float(payload: dict[str, Any], code: int | None) -> Converted:
    raw = payload["value"]
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        raise UnreadableValue(f"expected a floating-point number, got {describe(raw)}")
    return float(raw), ("float32" if code == 4 else "float64"), None, None


def _micros(fraction: Any) -> int:
    """DTS ``millis``: milliseconds below 1000, else already microseconds."""
    if fraction is None:
        return 0
    if isinstance(fraction, bool) or not isinstance(fraction, int) or not 0 <= fraction <= 999_999:
        raise UnreadableValue(f"fraction of second must be 0..999999, got {describe(fraction)}")
    return fraction * 1000 if fraction < 1000 else fraction


def _timestamp(payload: dict[str, Any], code: int | None) -> Converted:
    seconds = payload["timestamp"]
    if isinstance(seconds, bool) or not isinstance(seconds, int):
        raise UnreadableValue(f"expected epoch seconds, got {describe(seconds)}")
    try:
        instant = EPOCH + _dt.timedelta(seconds=seconds, microseconds=_micros(payload.get("millis")))
    except OverflowError:  # its message may quote the number
        raise UnreadableValue(f"expected epoch seconds within years 1-9999, got {describe(seconds)}") from None
    return instant, "timestamp", None, None


def _parts(payload: dict[str, Any]) -> tuple[int | None, ...]:
    names = ("year", "month", "day", "hour", "minute", "second")
    parts = tuple(_unwrap(payload.get(name)) for name in names)
    for name, part in zip(names, parts, strict=True):
        if part is not None and (isinstance(part, bool) or not isinstance(part, int)):
            raise UnreadableValue(f"DateTime.{name} must be an integer, got {describe(part)}")
    return parts


def _local(payload: dict[str, Any]) -> _dt.datetime | Unparsed:
    year, month, day, hour, minute, second = _parts(payload)
    micros = _micros(payload.get("millis"))
    try:
        return _dt.datetime(year or 0, month or 0, day or 0, hour or 0, minute or 0, second or 0, micros)
    except ValueError:
        if (year or 0) == 0 or (month or 0) == 0 or (day or 0) == 0:  # MySQL zero dates
            text = (
                f"{year or 0:04d}-{month or 0:02d}-{day or 0:02d} {hour or 0:02d}:{minute or 0:02d}:{second or 0:02d}"
            )
            return Unparsed(text)
        # datetime()'s message may quote a part ("year 99999 is out of range")
        raise UnreadableValue("DateTime is no valid date-time: a part is out of range") from None


def _datetime(payload: dict[str, Any], code: int | None) -> Converted:
    year, month, day, hour, minute, second = _parts(payload)
    if year is None and hour is None:
        raise UnreadableValue("DateTime has neither a date nor a time")
    if year is None and hour is not None:  # TIME: a signed duration, hours may exceed 23
        sign = -1 if hour < 0 else 1
        micros = ((abs(hour) * 60 + (minute or 0)) * 60 + (second or 0)) * 1_000_000 + _micros(payload.get("millis"))
        if not INT64_MIN <= sign * micros <= INT64_MAX:  # the canonical TIME is a long of microseconds
            raise UnreadableValue("DateTime is a time beyond the 64-bit range of microseconds")
        return SqlTime(sign * micros), "time", None, None
    if year is not None and month is None and hour is None:
        return year, "year", None, None
    if hour is None and code not in (7, 12, 17, 18):  # DATE (Oracle DATE comes with its time)
        try:
            return _dt.date(year or 0, month or 0, day or 0), "date", None, None
        except ValueError:
            if (year or 0) and (month or 0) and (day or 0):
                raise UnreadableValue("DateTime is no valid date: a part is out of range") from None
            return Unparsed(f"{year or 0:04d}-{month or 0:02d}-{day or 0:02d}"), "date", None, None
    return _local(payload), "datetime", None, None


def _timestamp_tz(payload: dict[str, Any], code: int | None) -> Converted:
    local = payload["value"]
    if not isinstance(local, dict):
        raise UnreadableValue("TimestampWithTimeZone.value must be a DateTime record")
    value = _local({str(key).lower(): item for key, item in local.items()})
    if isinstance(value, Unparsed):
        return value, "timestamp", None, None
    name = str(payload.get("timezone") or "").strip()
    return value.replace(tzinfo=_zone(name)).astimezone(UTC), "timestamp", None, None


def _zone(name: str) -> _dt.tzinfo:
    m = _OFFSET_RE.match(name)
    if m is not None:
        sign, hours, minutes = m.groups()
        offset = _dt.timedelta(hours=int(hours), minutes=int(minutes or 0))
        return _dt.timezone(-offset if sign == "-" else offset)
    try:
        return zone(name)
    except ValueError:  # its message names the zone, a part of the value
        raise UnreadableValue(f"unknown time zone: {describe(name)}") from None


def _binary(payload: dict[str, Any], code: int | None, logical: str = "bytes") -> Converted:
    raw = payload["value"]
    if not isinstance(raw, bytes):
        raise UnreadableValue(f"expected bytes, got {describe(raw)}")
    return raw, logical, None, None


def _text(payload: dict[str, Any], code: int | None, logical: str | None = None) -> Converted:
    raw = payload["value"]
    if not isinstance(raw, str):
        raise UnreadableValue(f"expected text, got {describe(raw)}")
    kind = logical or ("json" if str(payload.get("type") or "").upper() == "JSON" else "string")
    return raw, kind, None, None


def _binary_geometry(payload: dict[str, Any], code: int | None) -> Converted:
    return _binary(payload, code, "geometry")


def _text_geometry(payload: dict[str, Any], code: int | None) -> Converted:
    return _text(payload, code, "geometry")


_RECORDS: Final[dict[str, Callable[[dict[str, Any], int | None], Converted]]] = {
    "integer": _int_value,
    "character": _character,
    "decimal": _decimal,
    "float": _float,
    "timestamp": _timestamp,
    "datetime": _datetime,
    "timestampwithtimezone": _timestamp_tz,
    "binarygeometry": _binary_geometry,
    "textgeometry": _text_geometry,
    "binaryobject": _binary,
    "textobject": _text,
}


def _primitive(value: Any) -> Converted:
    """A plain Avro value (a user schema without DTS value records)."""
    if value is None:
        return None, "unknown", None, None
    if isinstance(value, bool):
        return value, "boolean", None, None
    if isinstance(value, int):
        return integer(value), ("int64" if INT64_MIN <= value <= INT64_MAX else "integer"), None, None
    if isinstance(value, float):
        return value, "float64", None, None
    if isinstance(value, str):
        return value, "string", None, None
    if isinstance(value, bytes):
        return value, "bytes", None, None
    if isinstance(value, Decimal):
        return value, "decimal", None, None
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            return value, "datetime", None, None
        return value.astimezone(UTC), "timestamp", None, None
    if isinstance(value, _dt.date):
        return value, "date", None, None
    if isinstance(value, _dt.time):
        micros = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
        return SqlTime(micros), "time", None, None
    if isinstance(value, uuid.UUID):
        return str(value), "string", None, None
    raise UnreadableValue(f"unsupported value: {describe(value)}")
