"""Renderers of the Canal family and its JSON cousins: a generated ``Change`` as one vendor message.

Formats and what each writes (see the parser module of each for the envelope):

- ``canal-json``: Alibaba Canal flat message as Canal's fastjson writes it (keys in
  alphabetical order): every value a string (``null`` for NULL), binary as ISO-8859-1
  text, DECIMAL with its scale digits, DOUBLE as Java's ``Double.toString``, DATETIME /
  TIMESTAMP with the column's fractional digits, TIMESTAMP as a wall clock in the
  source zone (``ctx.zone``). ``id`` = the change's sequence, ``es`` = commit ms,
  ``old`` = the prior values of the columns whose text changed (null when none).
- ``kafkariver-canal``: one row per message, ``binlog`` ``pos@file``, Canal value texts,
  NULL as ``v: ""`` with ``null: true``; on update every column carries ``updated`` and
  the changed ones ``origin_val`` (Canal's text of the old value: ``""`` for an old NULL).
- ``ckafka-v1``: Tencent CKafka "format one" DML (``NEW_VALUES`` / ``OLD_VALUES`` of
  strings, full prior row on update), ``TIME`` yyyyMMddHHmmss in ``ctx.zone``; binary
  as base64 (the connector is Debezium-based), TIMESTAMP as a wall clock in ``ctx.zone``.
- ``drs-json`` / ``drs-json-c``: Huawei DRS, Gson-escaped (``<>&='`` as ``\\u003c``...),
  bare ``mysqlType`` words, binary as a Java signed byte list ``[106, -1]``,
  ``id`` = sequence; JSON: TIMESTAMP as epoch seconds with the column's fraction and a
  DELETE's row in ``old``; JSON-C: TIMESTAMP as ``yyyy-mm-dd hh:mm:ss[.fff]`` in
  ``ctx.zone`` and a DELETE's row in ``data``. ``old`` is the full prior row.
- ``drs-avro``: DRS has no published Avro schema; ``DRS_FLAT_SCHEMA`` is the DRS JSON
  flat shape as an Avro record (the shape ``services/drs_avro`` documents). Values are
  Avro primitives where natural (long, double, bytes) and DRS JSON texts otherwise.
- ``maxwell-json``: Zendesk Maxwell (Jackson): JSON numbers for integers and decimals
  (exact digits), DOUBLE as Java text, DATETIME with its fraction, TIMESTAMP in UTC,
  base64 for binary, JSON columns as nested JSON, ``position`` ``file:pos``, ``xid``,
  ``ts`` in seconds. Every change is its own transaction, so every row is the commit
  row (``commit: true``, no ``xoffset``).
- ``ogg-json``: GoldenGate for Big Data operation-modeled JSON: ``table`` ``db.table``
  (GoldenGate's two-part MySQL name), ``op_ts`` in UTC, ``current_ts`` the GoldenGate
  host's wall clock in ``ctx.zone``, ``pos`` = 10-digit trail sequence (the binlog file
  index) + 10-digit RBA (the binlog position), ``tokens.txid``; JSON-typed values.

Every renderer is deterministic: the ingest times are the commit time plus a fixed lag.
"""

from __future__ import annotations

import base64
import datetime as dt
import io
import json
import math
from collections.abc import Sequence
from decimal import Decimal
from functools import cache
from typing import Any, Final, Literal

import fastavro
import orjson

from binlake.shared.event.values import SqlTime, Value, decimal_text
from binlake.shared.generate.render import RenderContext
from binlake.shared.generate.workload import COLUMNS, PRIMARY_KEY, Change, ColumnSpec
from binlake.shared.parsing.order import binlog_index

UTC: Final = dt.UTC
EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=UTC)
INGEST_LAG_MS: Final = 120
"""How long after the commit a vendor writes the message (``ts``, ``canalTime``...)."""

TimestampMode = Literal["wall", "epoch", "utc"]
BytesMode = Literal["latin1", "base64", "java_list"]

_SPEC: Final[dict[str, ColumnSpec]] = {spec.name: spec for spec in COLUMNS}
_GSON_ESCAPES: Final = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    (b"=", b"\\u003d"),
    (b"'", b"\\u0027"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


# ------------------------------------------------------------------ value texts


def java_double(value: float) -> str:
    """Java's ``Double.toString``: ``0.1``, ``1.0E-300``, ``1.2510357E7`` (shortest digits)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    # exponent of the first digit: value = 0.d1d2... * 10**(point)
    point = len(digit_tuple) + exponent
    head = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{head}0.{'0' * -point}{digits}"
        whole = digits[:point].ljust(point, "0")
        frac = digits[point:] or "0"
        return f"{head}{whole}.{frac}"
    return f"{head}{digits[0]}.{digits[1:] or '0'}E{point - 1}"


def fsp(spec: ColumnSpec) -> int:
    """The fractional-seconds precision of a temporal column type (``datetime(6)`` -> 6)."""
    _, paren, rest = spec.mysql_type.partition("(")
    if not paren:
        return 0
    inside = rest.partition(")")[0]
    return int(inside) if inside.isdigit() else 0


def local_text(value: dt.datetime, digits: int, sep: str = " ") -> str:
    """``YYYY-MM-DD HH:MM:SS[.f...]`` with exactly ``digits`` fractional digits."""
    text = (
        f"{value.year:04d}-{value.month:02d}-{value.day:02d}{sep}{value.hour:02d}:{value.minute:02d}:{value.second:02d}"
    )
    if digits:
        text += "." + f"{value.microsecond:06d}"[:digits]
    return text


def epoch_text(value: dt.datetime, digits: int) -> str:
    """Epoch seconds with ``digits`` fractional digits (DRS JSON TIMESTAMP)."""
    micros = (value - EPOCH) // dt.timedelta(microseconds=1)
    seconds, frac = divmod(micros, 1_000_000)
    return f"{seconds}.{f'{frac:06d}'[:digits]}" if digits else str(seconds)


def java_byte_list(value: bytes) -> str:
    """``Arrays.toString(byte[])``: Java bytes are signed."""
    return "[" + ", ".join(str(b - 256 if b > 127 else b) for b in value) + "]"


def bytes_text(value: bytes, mode: BytesMode) -> str:
    if mode == "latin1":
        return value.decode("latin-1")
    if mode == "base64":
        return base64.b64encode(value).decode("ascii")
    return java_byte_list(value)


def instant_text(value: dt.datetime, spec: ColumnSpec, mode: TimestampMode, zone: dt.tzinfo) -> str:
    digits = fsp(spec)
    if mode == "epoch":
        return epoch_text(value, digits)
    if mode == "utc":
        return local_text(value.astimezone(UTC), digits)
    return local_text(value.astimezone(zone), digits)


def mysql_text(
    value: Value, spec: ColumnSpec, zone: dt.tzinfo, *, timestamps: TimestampMode, binary: BytesMode
) -> str | None:
    """The string a Canal-like vendor writes for a typed value (None for NULL)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, Decimal):
        return decimal_text(value)
    if isinstance(value, float):
        return java_double(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return bytes_text(value, binary)
    if isinstance(value, SqlTime):
        return value.isoformat()
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            return instant_text(value, spec, timestamps, zone)
        return local_text(value, fsp(spec))
    if isinstance(value, dt.date):
        return value.isoformat()
    raise TypeError(f"cannot render {type(value).__name__} for column {spec.name}")


def _texts(
    image: dict[str, Value], zone: dt.tzinfo, *, timestamps: TimestampMode, binary: BytesMode
) -> dict[str, str | None]:
    return {
        name: mysql_text(value, _SPEC[name], zone, timestamps=timestamps, binary=binary)
        for name, value in image.items()
    }


def _changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Columns whose rendered values differ (what Canal / Maxwell mark as updated)."""
    return [name for name in after if name in before and before[name] != after[name]]


def _image(change: Change) -> dict[str, Value]:
    image = change.after if change.after is not None else change.before
    assert image is not None
    return image


def _ordered(image: dict[str, Value]) -> dict[str, Value]:
    """The image in table column order (as a binlog row has it)."""
    return {spec.name: image[spec.name] for spec in COLUMNS if spec.name in image}


def _json_exact(text: str) -> orjson.Fragment:
    """A JSON document re-written compactly, every number keeping its digits."""
    doc = json.loads(text, parse_float=orjson.Fragment, parse_int=orjson.Fragment)
    return orjson.Fragment(orjson.dumps(doc))


def _gson(doc: Any) -> bytes:
    """Compact JSON as Gson writes it: HTML-safe escapes for ``< > & = '``."""
    raw = orjson.dumps(doc)
    for char, escape in _GSON_ESCAPES:
        raw = raw.replace(char, escape)
    return raw


def _mysql_types() -> dict[str, str]:
    return {spec.name: spec.mysql_type for spec in COLUMNS}


def _bare_types() -> dict[str, str]:
    """DRS's ``mysqlType``: the bare type word (``decimal``, ``bigint``)."""
    return {spec.name: spec.mysql_type.partition("(")[0].split()[0] for spec in COLUMNS}


def _jdbc_types() -> dict[str, int]:
    return {spec.name: spec.jdbc for spec in COLUMNS}


# ------------------------------------------------------------------ canal-json


def render_canal_json(change: Change, ctx: RenderContext) -> bytes:
    return canal_flat_message([change], change.sequence, ctx)


def canal_flat_message(changes: Sequence[Change], batch_id: int, ctx: RenderContext) -> bytes:
    """One Canal flat message: the rows of one binlog row event (one table, one op), ``id`` the batch's."""
    first = changes[0]
    assert all((c.database, c.table, c.op) == (first.database, first.table, first.op) for c in changes)
    zone = ctx.zone
    rows: list[dict[str, str | None]] = []
    olds: list[dict[str, str | None]] = []
    for change in changes:
        if change.op == "DELETE":
            assert change.before is not None
            rows.append(_texts(_ordered(change.before), zone, timestamps="wall", binary="latin1"))
            continue
        assert change.after is not None
        data = _texts(_ordered(change.after), zone, timestamps="wall", binary="latin1")
        rows.append(data)
        if change.op == "UPDATE":
            assert change.before is not None
            prior = _texts(_ordered(change.before), zone, timestamps="wall", binary="latin1")
            olds.append({name: prior[name] for name in _changed(prior, data)})
    # Canal's ``old`` holds each row's changed columns; null when no row changed a column.
    old = olds if any(olds) else None
    doc = {
        "data": rows,
        "database": first.database,
        "es": first.ts_ms,
        "id": batch_id,
        "isDdl": False,
        "mysqlType": _mysql_types(),
        "old": old,
        "pkNames": list(PRIMARY_KEY),
        "sql": "",
        "sqlType": _jdbc_types(),
        "table": first.table,
        "ts": first.ts_ms + INGEST_LAG_MS,
        "type": first.op,
    }
    return orjson.dumps(doc)


def canal_batches(changes: Sequence[Change], *, max_rows: int = 4, batch_messages: int = 5) -> list[list[list[Change]]]:
    """``changes`` as Canal delivers them: batches of flat messages, each message one row event.

    Consecutive changes of one transaction, table and op to distinct rows form one
    message (a multi-row statement's row event, at most ``max_rows`` rows); every
    ``batch_messages`` messages form one batch, whose flat messages all carry its ``id``.
    """
    messages: list[list[Change]] = []
    for change in changes:
        last = messages[-1] if messages else None
        if (
            last is not None
            and len(last) < max_rows
            and (last[0].txid, last[0].database, last[0].table, last[0].op)
            == (change.txid, change.database, change.table, change.op)
            and all(c.key != change.key for c in last)
        ):
            last.append(change)
        else:
            messages.append([change])
    return [messages[i : i + batch_messages] for i in range(0, len(messages), batch_messages)]


def render_canal_json_batches(changes: Sequence[Change], ctx: RenderContext) -> list[tuple[bytes, bytes]]:
    """(Kafka key, message) of every flat message of ``canal_batches``; batch ids count from 1.

    Keyed by ``database.table``, as Canal's ``canal.mq.partitionHash`` by table: a
    table's messages stay in one partition, in binlog order.
    """
    out = []
    for batch_id, batch in enumerate(canal_batches(changes), start=1):
        for message in batch:
            key = f"{message[0].database}.{message[0].table}".encode()
            out.append((key, canal_flat_message(message, batch_id, ctx)))
    return out


# ------------------------------------------------------------ kafkariver-canal


def render_kafkariver(change: Change, ctx: RenderContext) -> bytes:
    zone = ctx.zone
    values = _texts(_ordered(_image(change)), zone, timestamps="wall", binary="latin1")
    prior: dict[str, str | None] | None = None
    if change.op == "UPDATE":
        assert change.before is not None
        prior = _texts(_ordered(change.before), zone, timestamps="wall", binary="latin1")
    columns: list[dict[str, Any]] = []
    for name, text in values.items():
        entry: dict[str, Any] = {"n": name, "t": _SPEC[name].mysql_type, "v": "" if text is None else text}
        if prior is not None:
            updated = prior[name] != text
            if updated:
                # Canal's column value of a NULL is "": the old value cannot say NULL.
                entry["origin_val"] = "" if prior[name] is None else prior[name]
            entry["null"] = text is None
            entry["updated"] = updated
        else:
            entry["null"] = text is None
        columns.append(entry)
    doc = {
        "binlog": f"{change.binlog_pos}@{change.binlog_file}",
        "time": change.ts_ms,
        "canalTime": change.ts_ms + INGEST_LAG_MS,
        "db": change.database,
        "table": change.table,
        "event": {"INSERT": "i", "UPDATE": "u", "DELETE": "d"}[change.op],
        "columns": columns,
        "keys": list(PRIMARY_KEY),
    }
    return orjson.dumps(doc)


# ------------------------------------------------------------------- ckafka-v1


def render_ckafka(change: Change, ctx: RenderContext) -> bytes:
    zone = ctx.zone

    def texts(image: dict[str, Value] | None) -> dict[str, str | None] | None:
        if image is None:
            return None
        return _texts(_ordered(image), zone, timestamps="wall", binary="base64")

    local = dt.datetime.fromtimestamp(change.ts_ms / 1000, UTC).astimezone(zone)
    doc = {
        "BINLOG_NAME": change.binlog_file,
        "BINLOG_POS": change.binlog_pos,
        "DATABASE": change.database,
        "EVENT_SERVER_ID": None,
        "GLOBAL_ID": None,
        "GROUP_ID": None,
        "NEW_VALUES": texts(change.after),
        "OLD_VALUES": texts(change.before),
        "TABLE": change.table,
        "TIME": local.strftime("%Y%m%d%H%M%S"),
        "TYPE": {"INSERT": "I", "UPDATE": "U", "DELETE": "D"}[change.op],
    }
    return orjson.dumps(doc)


# -------------------------------------------------------------- drs-json(-c)


def _drs_doc(change: Change, ctx: RenderContext, variant: Literal["json", "json-c"]) -> dict[str, Any]:
    timestamps: TimestampMode = "epoch" if variant == "json" else "wall"

    def rows(image: dict[str, Value] | None) -> list[dict[str, str | None]] | None:
        if image is None:
            return None
        return [_texts(_ordered(image), ctx.zone, timestamps=timestamps, binary="java_list")]

    if change.op == "DELETE":
        data, old = (None, rows(change.before)) if variant == "json" else (rows(change.before), None)
    else:
        data, old = rows(change.after), rows(change.before)
    return {
        "mysqlType": _bare_types(),
        "id": change.sequence,
        "es": change.ts_ms,
        "ts": change.ts_ms + INGEST_LAG_MS,
        "database": change.database,
        "table": change.table,
        "type": change.op,
        "isDdl": False,
        "sql": "",
        "sqlType": _jdbc_types(),
        "data": data,
        "old": old,
        "pkNames": list(PRIMARY_KEY),
    }


def render_drs_json(change: Change, ctx: RenderContext) -> bytes:
    return _gson(_drs_doc(change, ctx, "json"))


def render_drs_json_c(change: Change, ctx: RenderContext) -> bytes:
    return _gson(_drs_doc(change, ctx, "json-c"))


# -------------------------------------------------------------------- drs-avro

_AVRO_VALUE: Final = ["null", "string", "long", "double", "bytes"]
_AVRO_ROWS: Final = ["null", {"type": "array", "items": {"type": "map", "values": _AVRO_VALUE}}]

DRS_FLAT_SCHEMA: Final[dict[str, Any]] = {
    "type": "record",
    "name": "DrsFlatRecord",
    "namespace": "binlake.generate",
    "doc": "The DRS JSON flat message as an Avro record (DRS publishes its own schema only as record.rar).",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "es", "type": "long"},
        {"name": "ts", "type": "long"},
        {"name": "database", "type": "string"},
        {"name": "table", "type": "string"},
        {"name": "type", "type": "string"},
        {"name": "isDdl", "type": "boolean"},
        {"name": "sql", "type": "string"},
        {"name": "mysqlType", "type": {"type": "map", "values": "string"}},
        {"name": "sqlType", "type": {"type": "map", "values": "int"}},
        {"name": "pkNames", "type": ["null", {"type": "array", "items": "string"}], "default": None},
        {"name": "data", "type": _AVRO_ROWS, "default": None},
        {"name": "old", "type": _AVRO_ROWS, "default": None},
    ],
}
"""The Avro schema ``render_drs_avro`` writes with (also returned by ``parse_options``)."""

_INT64: Final = (-(2**63), 2**63 - 1)


@cache
def _parsed_drs_schema() -> Any:
    return fastavro.parse_schema(DRS_FLAT_SCHEMA)


def _avro_value(value: Value, spec: ColumnSpec, zone: dt.tzinfo) -> Any:
    """An Avro primitive where one fits exactly, else DRS JSON's text."""
    if isinstance(value, int) and not isinstance(value, bool) and _INT64[0] <= value <= _INT64[1]:
        return int(value)
    if isinstance(value, float):
        return value
    if isinstance(value, bytes):
        return value
    return mysql_text(value, spec, zone, timestamps="epoch", binary="java_list")


def render_drs_avro(change: Change, ctx: RenderContext) -> bytes:
    def rows(image: dict[str, Value] | None) -> list[dict[str, Any]] | None:
        if image is None:
            return None
        return [{name: _avro_value(value, _SPEC[name], ctx.zone) for name, value in _ordered(image).items()}]

    record = {
        "id": change.sequence,
        "es": change.ts_ms,
        "ts": change.ts_ms + INGEST_LAG_MS,
        "database": change.database,
        "table": change.table,
        "type": change.op,
        "isDdl": False,
        "sql": "",
        "mysqlType": _bare_types(),
        "sqlType": _jdbc_types(),
        "pkNames": list(PRIMARY_KEY),
        # A DELETE's row goes in ``old``, as in DRS JSON.
        "data": None if change.op == "DELETE" else rows(change.after),
        "old": rows(change.before),
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _parsed_drs_schema(), record)
    return out.getvalue()


# ---------------------------------------------------------------- maxwell-json


def _json_value(value: Value, spec: ColumnSpec, zone: dt.tzinfo, timestamps: TimestampMode) -> Any:
    """A JSON-typed value as Maxwell / GoldenGate write it (numbers exact, binary base64)."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return orjson.Fragment(int.__repr__(value))
    if isinstance(value, Decimal):
        return orjson.Fragment(decimal_text(value))
    if isinstance(value, float):
        return orjson.Fragment(java_double(value))
    return mysql_text(value, spec, zone, timestamps=timestamps, binary="base64")


def _maxwell_image(image: dict[str, Value], zone: dt.tzinfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in _ordered(image).items():
        spec = _SPEC[name]
        if spec.mysql_type == "json" and isinstance(value, str):
            out[name] = _json_exact(value)  # Maxwell nests JSON columns
        else:
            out[name] = _json_value(value, spec, zone, "utc")
    return out


def render_maxwell(change: Change, ctx: RenderContext) -> bytes:
    image = _image(change)
    doc: dict[str, Any] = {
        "database": change.database,
        "table": change.table,
        "type": change.op.lower(),
        "ts": change.ts_ms // 1000,
        "xid": change.txid,
        "commit": True,  # one row per transaction: every row is the commit row (no xoffset)
        "position": f"{change.binlog_file}:{change.binlog_pos}",
        "server_id": 1,
        "primary_key": [_json_value(image[name], _SPEC[name], UTC, "utc") for name in PRIMARY_KEY],
        "primary_key_columns": list(PRIMARY_KEY),
        "data": _maxwell_image(image, UTC),
    }
    if change.op == "UPDATE":
        assert change.before is not None
        after_texts = _texts(_ordered(image), UTC, timestamps="utc", binary="base64")
        before_texts = _texts(_ordered(change.before), UTC, timestamps="utc", binary="base64")
        changed = _changed(before_texts, after_texts)
        if changed:  # Maxwell omits an empty ``old``
            prior = _maxwell_image(change.before, UTC)
            doc["old"] = {name: prior[name] for name in changed}
    return orjson.dumps(doc)


# -------------------------------------------------------------------- ogg-json


def _ogg_image(image: dict[str, Value]) -> dict[str, Any]:
    return {name: _json_value(value, _SPEC[name], UTC, "utc") for name, value in _ordered(image).items()}


def render_ogg(change: Change, ctx: RenderContext) -> bytes:
    commit = EPOCH + dt.timedelta(milliseconds=change.ts_ms)
    written = (commit + dt.timedelta(milliseconds=INGEST_LAG_MS)).astimezone(ctx.zone)
    doc: dict[str, Any] = {
        "table": f"{change.database}.{change.table}",
        "op_type": {"INSERT": "I", "UPDATE": "U", "DELETE": "D"}[change.op],
        "op_ts": local_text(commit, 6),
        "current_ts": local_text(written, 6, sep="T"),
        "pos": f"{binlog_index(change.binlog_file):010d}{change.binlog_pos:010d}",
        "primary_keys": list(PRIMARY_KEY),
        "tokens": {"txid": str(change.txid)},
    }
    if change.before is not None:
        doc["before"] = _ogg_image(change.before)
    if change.after is not None:
        doc["after"] = _ogg_image(change.after)
    return orjson.dumps(doc)


# ------------------------------------------------------------- parse options


def parse_options(format_id: str) -> dict[str, Any]:
    """What binlake's parser needs to read the rendered messages of ``format_id``."""
    if format_id == "drs-avro":
        return {"avro_schema": DRS_FLAT_SCHEMA, "options": {"avro_schema": DRS_FLAT_SCHEMA}}
    if format_id == "ogg-json":
        return {"options": {"db_type": "MYSQL"}}
    return {}
