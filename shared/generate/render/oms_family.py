"""Renderers of the OceanBase OMS serializations and of Debezium (JSON envelope and SMT rows).

Each ``render_*`` writes one generated ``Change`` as the message the vendor sends:

- ``oms-default``: OMS "Default" JSON (``allMetaData`` / ``prevStruct`` / ``postStruct``);
  values in OMS's text protocol (see ``_oms_value``), ``storeDataSequence`` =
  ``ts_ms * 10^5 + seq``.
- ``oms-extend-column-type``: the same plus ``__light_type`` in each image, typing every
  column with OMS's type words (``BIGINT`` is OMS's beyond-64-bit integer).
- ``oms-dataworks``: DataWorks 2.0 (``schema.column`` types, ``pk`` ["id"], numeric ``scn``).
- ``oms-shareplex``: SharePlex JSON; an UPDATE's ``data`` holds only the changed columns and
  ``key`` the whole prior row (the parser's after image is ``key`` overlaid with ``data``);
  ``meta.time`` is a wall clock of the source zone (``ctx.zone``).
- ``oms-avro``: a DTS ``Record`` in plain Avro binary (fastavro against
  ``services/oms_avro/dts_record.avsc``), one image item per column by its MySQL type.
- ``debezium-json``: the Debezium MySQL connector's change event with the JsonConverter
  schema envelope (``bigint.unsigned.handling.mode=precise``, ``decimal.handling.mode=precise``,
  ``time.precision.mode=adaptive_time_microseconds``, ``binary.handling.mode=bytes``).
- ``debezium-smt``: the row after ExtractNewRecordState (``delete.handling.mode=rewrite``,
  ``add.fields=db,table,source.ts_ms``) with its Connect schema: no ``__op``, so an insert
  cannot be told from an update (UPSERT).

``ctx.options["tenant"]`` (optional) names an OceanBase tenant: OMS then reports the
source as ``OB_MYSQL`` and the database as ``tenant.database`` (parsers split it again).
"""

from __future__ import annotations

import base64
import datetime as dt
import functools
import io
import json
import math
from decimal import Decimal
from importlib import resources
from typing import Any, Final

import fastavro
import orjson

from binlake.shared.event.values import BigInt, Image, SqlTime, Value
from binlake.shared.generate.render import RenderContext
from binlake.shared.generate.workload import COLUMNS, PRIMARY_KEY, Change, ColumnSpec

SEQUENCE_SCALE: Final = 100_000
"""OMS sequences: change time in ms * 10^5 + a sequence of at most five digits."""

_EPOCH: Final = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LOCAL_EPOCH: Final = dt.datetime(1970, 1, 1)
_EPOCH_DATE: Final = dt.date(1970, 1, 1)
_SPECS: Final[dict[str, ColumnSpec]] = {spec.name: spec for spec in COLUMNS}
_KEY_SEPARATOR: Final = "\u0001"


# ------------------------------------------------------------------ helpers


def _base_type(spec: ColumnSpec) -> str:
    """``bigint(20) unsigned`` -> ``bigint unsigned``; ``decimal(38,10)`` -> ``decimal``."""
    head, _, tail = spec.mysql_type.lower().partition("(")
    rest = tail.partition(")")[2] if tail else ""
    return " ".join((head + " " + rest).split())


def _fsp(spec: ColumnSpec) -> int:
    """Fractional-second precision of a temporal column type (``timestamp(3)`` -> 3)."""
    _, _, tail = spec.mysql_type.partition("(")
    inside = tail.partition(")")[0]
    return int(inside) if inside.isdigit() else 0


def _spec(name: str) -> ColumnSpec:
    spec = _SPECS.get(name)
    if spec is None:
        raise ValueError(f"column {name!r} is not a workload column")
    return spec


def _columns(change: Change) -> list[str]:
    """The change's column names in table order."""
    image = change.after if change.after is not None else change.before
    assert image is not None
    return [spec.name for spec in COLUMNS if spec.name in image] + [n for n in image if n not in _SPECS]


def _seconds_and_micros(value: dt.datetime) -> tuple[int, int]:
    micros = (value - _EPOCH) // dt.timedelta(microseconds=1)
    return divmod(micros, 1_000_000)


def _epoch_text(value: dt.datetime) -> str:
    """OMS TIMESTAMP: ``[epoch seconds][.fraction]``, the fraction's non-zero digits only."""
    seconds, micros = _seconds_and_micros(value)
    return str(seconds) + (f".{micros:06d}".rstrip("0") if micros else "")


def _local_text(value: dt.datetime) -> str:
    """A wall clock ``YYYY-MM-DD HH:MM:SS[.ffffff]`` (no zone id: a MySQL DATETIME has none)."""
    return value.isoformat(sep=" ")


def _exact_float(value: float, plain: bool) -> orjson.Fragment:
    """A DOUBLE as OMS prints it: the exact decimal expansion of the binary value (BigDecimal)."""
    if not math.isfinite(value):
        raise ValueError(f"a SQL DOUBLE cannot be {value!r}")
    exact = Decimal(value)
    return orjson.Fragment(f"{exact:f}" if plain else str(exact))


def _decimal_fragment(value: Decimal, plain: bool) -> orjson.Fragment:
    """A DECIMAL's own digits: Java ``BigDecimal.toString`` (= Python ``str``) or ``toPlainString``."""
    if not value.is_finite():
        raise ValueError(f"a SQL DECIMAL cannot be {value!r}")
    return orjson.Fragment(f"{value:f}" if plain else str(value))


def _json_int(value: int) -> int | orjson.Fragment:
    return orjson.Fragment(int.__repr__(value)) if isinstance(value, BigInt) or value > 2**63 - 1 else int(value)


def _dumps(doc: Any) -> bytes:
    return orjson.dumps(doc)


def _tenant(ctx: RenderContext) -> str | None:
    tenant = ctx.options.get("tenant")
    return tenant if isinstance(tenant, str) and tenant else None


def _oms_sequence(change: Change) -> int:
    return change.ts_ms * SEQUENCE_SCALE + change.sequence % SEQUENCE_SCALE


def _wall_clock(ts_ms: int, zone: dt.tzinfo) -> str:
    """``YYYY-MM-DDTHH:mm:ss`` of an instant in the source zone (SharePlex meta times)."""
    instant = _EPOCH + dt.timedelta(milliseconds=ts_ms)
    return instant.astimezone(zone).replace(tzinfo=None).isoformat(timespec="seconds")


# ------------------------------------------------------------------ OMS text protocol


def _oms_value(value: Value, *, plain_numbers: bool = False) -> Any:
    """One column value in OMS's text protocol ("資料庫傳輸到文本協議的格式說明", MySQL tenant).

    Integers as JSON numbers (beyond 64 bits too), DECIMAL with its digits and
    trailing zeros (BigDecimal), DOUBLE as its exact expansion, bytes base64, DATE
    ``YYYY-MM-DD``, TIME ``[-]HH:mm:ss[.f]``, DATETIME ``YYYY-MM-DD HH:mm:ss[.ffffff]``,
    TIMESTAMP epoch seconds ``S[.f]``. DataWorks prints the numbers without exponent.
    """
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return _json_int(value)
    if isinstance(value, Decimal):
        return _decimal_fragment(value, plain_numbers)
    if isinstance(value, float):
        return _exact_float(value, plain_numbers)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, SqlTime):
        return value.isoformat()
    if isinstance(value, dt.datetime):
        return _epoch_text(value) if value.tzinfo is not None else _local_text(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    raise ValueError(f"no OMS rendering for {type(value).__name__}")


def _oms_image(image: Image | None, *, plain_numbers: bool = False) -> dict[str, Any] | None:
    if image is None:
        return None
    return {name: _oms_value(value, plain_numbers=plain_numbers) for name, value in image.items()}


_OMS_TYPE_WORDS: Final[dict[str, str]] = {
    "bigint unsigned": "BIGINT",  # OMS BIGINT: integers beyond 64 bits
    "bigint": "INT64",
    "int": "INT",
    "tinyint": "TINYINT",
    "smallint": "SMALLINT",
    "decimal": "DECIMAL",
    "double": "DOUBLE",
    "float": "FLOAT",
    "varchar": "VARCHAR",
    "text": "VARCHAR",
    "datetime": "DATETIME",
    "timestamp": "TIMESTAMP",
    "date": "DATE",
    "time": "TIME",
    "blob": "BLOB",
    "json": "JSON",
}


def _oms_type_word(name: str) -> str:
    base = _base_type(_spec(name))
    word = _OMS_TYPE_WORDS.get(base) or _OMS_TYPE_WORDS.get(base.split()[0])
    if word is None:
        raise ValueError(f"no OMS type word for column {name!r} ({base})")
    return word


def _db_and_type(change: Change, ctx: RenderContext) -> tuple[str, str]:
    """(``db`` text, ``dbType``): ``tenant.database`` and OB_MYSQL for an OceanBase tenant."""
    tenant = _tenant(ctx)
    if tenant is None:
        return change.database, "MYSQL"
    return f"{tenant}.{change.database}", "OB_MYSQL"


def _default_doc(change: Change, ctx: RenderContext, *, extend: bool) -> dict[str, Any]:
    db, db_type = _db_and_type(change, ctx)
    seconds = str(change.ts_ms // 1000)
    prev = _oms_image(change.before)
    post = _oms_image(change.after)
    if extend:
        light = {name: {"schemaType": _oms_type_word(name)} for name in _columns(change)}
        for image in (prev, post):
            if image is not None:
                image["__light_type"] = light
    key_image = change.after if change.after is not None else change.before
    assert key_image is not None
    return {
        "allMetaData": {
            "checkpoint": seconds,
            "record_primary_key": _KEY_SEPARATOR.join(PRIMARY_KEY),
            "source_identity": None,
            "record_primary_value": _KEY_SEPARATOR.join(str(key_image[name]) for name in PRIMARY_KEY),
            "dbType": db_type,
            "storeDataSequence": str(_oms_sequence(change)),
            "table_name": change.table,
            "db": db,
            "timestamp": seconds,
            "uniqueId": str(change.txid),
        },
        "prevStruct": prev,
        "recordType": change.op,
        "postStruct": post,
    }


def render_oms_default(change: Change, ctx: RenderContext) -> bytes:
    return _dumps(_default_doc(change, ctx, extend=False))


def render_oms_extend(change: Change, ctx: RenderContext) -> bytes:
    return _dumps(_default_doc(change, ctx, extend=True))


def render_oms_dataworks(change: Change, ctx: RenderContext) -> bytes:
    tenant = _tenant(ctx)
    doc = {
        "version": "2.0",
        "schema": {
            "source": {
                "dbType": "mysql" if tenant is None else "ob_mysql",
                "dbVersion": None,
                "dbName": change.database if tenant is None else f"{tenant}.{change.database}",
                "schema": None,
                "table": change.table,
            },
            "column": [{"name": name, "type": _oms_type_word(name)} for name in _columns(change)],
            "pk": list(PRIMARY_KEY),
        },
        "payload": {
            "before": None if change.before is None else {"data": _oms_image(change.before, plain_numbers=True)},
            "after": None if change.after is None else {"data": _oms_image(change.after, plain_numbers=True)},
            "op": change.op,
            "timestamp": {
                "eventTime": change.ts_ms,
                "systemTime": change.ts_ms + 795,
                "checkpointTime": change.ts_ms // 1000,
            },
            "ddl": None,
            "scn": str(_oms_sequence(change)),
        },
        "extend": {},
    }
    return _dumps(doc)


_SHAREPLEX_OPS: Final = {"INSERT": "ins", "UPDATE": "upd", "DELETE": "del"}


def render_oms_shareplex(change: Change, ctx: RenderContext) -> bytes:
    tenant = _tenant(ctx)
    table = f"{change.database}.{change.table}" if tenant is None else f"{tenant}.{change.database}.{change.table}"
    key_image = change.before if change.before is not None else change.after
    assert key_image is not None
    doc: dict[str, Any] = {}
    if change.op == "UPDATE":
        assert change.before is not None and change.after is not None
        before = change.before
        changed = {
            name: value for name, value in change.after.items() if name not in before or not _same(before[name], value)
        }
        doc["data"] = _oms_image(changed)
    else:
        doc["data"] = _oms_image(change.after if change.op == "INSERT" else change.before)
    doc["meta"] = {
        "posttime": _wall_clock(change.ts_ms + 1000, ctx.zone),
        "op": _SHAREPLEX_OPS[change.op],
        "size": 1,
        "time": _wall_clock(change.ts_ms, ctx.zone),
        "idx": "1/1",
        "seq": 1,
        "table": table,
        "rowid": f"{table}-" + _KEY_SEPARATOR.join(str(key_image[name]) for name in PRIMARY_KEY),
        "trans": str(change.txid),
        "scn": str(_oms_sequence(change)),
    }
    if change.op == "UPDATE":
        doc["key"] = _oms_image(change.before)
    return _dumps(doc)


def _same(a: Value, b: Value) -> bool:
    return type(a) is type(b) and a == b


# ------------------------------------------------------------------ OMS Avro (DTS Record)

_NS: Final = "com.alibaba.dts.formats.avro."
_CHARSET: Final = "utf8mb4"

# MySQL binlog column type codes (Field.dataTypeNumber) of the workload's types.
_MYSQL_CODES: Final[dict[str, int]] = {
    "bigint unsigned": 8,  # LONGLONG
    "bigint": 8,
    "int": 3,  # LONG
    "tinyint": 1,  # TINY
    "smallint": 2,
    "decimal": 246,  # NEWDECIMAL
    "double": 5,
    "float": 4,
    "varchar": 15,
    "text": 252,  # TEXT shares BLOB's code
    "blob": 252,
    "datetime": 18,  # DATETIME2
    "timestamp": 17,  # TIMESTAMP2
    "date": 10,
    "time": 19,  # TIME2
    "json": 245,
}


def _mysql_code(name: str) -> int:
    base = _base_type(_spec(name))
    code = _MYSQL_CODES.get(base) or _MYSQL_CODES.get(base.split()[0])
    if code is None:
        raise ValueError(f"no MySQL type code for column {name!r} ({base})")
    return code


def _avro_item(name: str, value: Value) -> Any:
    """One image item (a named union branch) as OMS's Avro mapping writes it."""
    if value is None:
        return None
    spec = _spec(name)
    base = _base_type(spec).split()[0]
    if isinstance(value, bool):
        value = int(value)
    if isinstance(value, int):
        return (_NS + "Integer", {"precision": 8, "value": str(int(value))})
    if isinstance(value, Decimal):
        _, _, tail = spec.mysql_type.partition("(")
        precision, _, scale = tail.partition(")")[0].partition(",")
        return (
            _NS + "Decimal",
            {"value": str(value), "precision": int(precision or 0), "scale": int(scale or 0)},
        )
    if isinstance(value, float):
        return (_NS + "Float", {"value": value, "precision": 8, "scale": 64})
    if isinstance(value, bytes):
        return (_NS + "BinaryObject", {"type": base.upper(), "value": value})
    if isinstance(value, str):
        if base == "json":
            return (_NS + "TextObject", {"type": "JSON", "value": value})
        return (_NS + "Character", {"charset": _CHARSET, "value": value.encode("utf-8")})
    if isinstance(value, SqlTime):
        return (_NS + "DateTime", _avro_time(value))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            seconds, micros = _seconds_and_micros(value)
            return (_NS + "Timestamp", {"timestamp": seconds, "millis": micros})
        return (
            _NS + "DateTime",
            {
                "year": value.year,
                "month": value.month,
                "day": value.day,
                "hour": value.hour,
                "minute": value.minute,
                "second": value.second,
                "millis": value.microsecond,
            },
        )
    if isinstance(value, dt.date):
        fields = dict.fromkeys(("hour", "minute", "second", "millis"))
        return (_NS + "DateTime", {"year": value.year, "month": value.month, "day": value.day, **fields})
    raise ValueError(f"no DTS Record item for {type(value).__name__}")


def _avro_time(value: SqlTime) -> dict[str, Any]:
    """A MySQL TIME as DateTime parts; a negative duration has every non-zero part negative."""
    sign = -1 if value.micros < 0 else 1
    rest, micros = divmod(abs(value.micros), 1_000_000)
    rest, second = divmod(rest, 60)
    hour, minute = divmod(rest, 60)
    return {
        "year": None,
        "month": None,
        "day": None,
        "hour": sign * hour,
        "minute": sign * minute,
        "second": sign * second,
        "millis": sign * micros,
    }


@functools.cache
def _dts_schema() -> Any:
    """The DTS ``Record`` writer schema, read from ``services/oms_avro/dts_record.avsc``."""
    text = resources.files("binlake.services.oms_avro").joinpath("dts_record.avsc").read_text("utf-8")
    types: list[dict[str, Any]] = json.loads(text)
    named: dict[str, Any] = {}
    for named_type in types[:-1]:
        fastavro.parse_schema(named_type, named_schemas=named)
    return fastavro.parse_schema(types[-1], named_schemas=named)


def render_oms_avro(change: Change, ctx: RenderContext) -> bytes:
    names = _columns(change)

    def images(image: Image | None) -> list[Any] | None:
        return None if image is None else [_avro_item(name, image.get(name)) for name in names]

    seconds = change.ts_ms // 1000
    record = {
        "version": 1,
        "id": _oms_sequence(change),
        "sourceTimestamp": seconds,
        "sourcePosition": str(seconds),
        "safeSourcePosition": str(seconds),
        "sourceTxid": str(change.txid),
        "source": {"sourceType": "MySQL", "version": "OBMySQL"},
        "operation": change.op,
        "objectName": f"{change.database}.{change.table}",
        "processTimestamps": [change.ts_ms + 480],
        "tags": {"pk_uk_info": json.dumps({"PRIMARY": PRIMARY_KEY}, separators=(",", ":"))},
        "fields": [{"name": name, "dataTypeNumber": _mysql_code(name)} for name in names],
        "beforeImages": images(change.before),
        "afterImages": images(change.after),
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, _dts_schema(), record)
    return out.getvalue()


# ------------------------------------------------------------------ Debezium

_SERVER: Final = "binlake"
_CONNECTOR_VERSION: Final = "2.5.0.Final"
_DECIMAL: Final = "org.apache.kafka.connect.data.Decimal"


def _java_double(value: float) -> orjson.Fragment:
    """A double as Jackson writes it (``Double.toString``: shortest digits, ``E`` form outside 1e-3..1e7)."""
    if not math.isfinite(value):
        raise ValueError(f"JSON cannot carry {value!r}")
    if value == 0:
        return orjson.Fragment("-0.0" if math.copysign(1.0, value) < 0 else "0.0")
    shortest = Decimal(repr(value))
    if 1e-3 <= abs(value) < 1e7:
        text = f"{shortest:f}"
        return orjson.Fragment(text if "." in text else text + ".0")
    sign, digits, _ = shortest.as_tuple()
    text = "".join(map(str, digits)).rstrip("0") or "0"
    mantissa = text[0] + "." + (text[1:] or "0")
    return orjson.Fragment(f"{'-' if sign else ''}{mantissa}E{shortest.adjusted()}")


def _decimal_params(spec: ColumnSpec) -> tuple[int, int]:
    """(precision, scale) of a DECIMAL column; BIGINT UNSIGNED (precise mode) is (20, 0)."""
    base = _base_type(spec)
    if base == "bigint unsigned":
        return 20, 0
    _, _, tail = spec.mysql_type.partition("(")
    precision, _, scale = tail.partition(")")[0].partition(",")
    return int(precision), int(scale or 0)


def _connect_field(spec: ColumnSpec) -> dict[str, Any]:
    """The Connect field schema the Debezium MySQL connector gives a column."""
    base = _base_type(spec)
    out: dict[str, Any]
    if base == "bigint unsigned" or base.startswith("decimal"):
        precision, scale = _decimal_params(spec)
        out = {
            "type": "bytes",
            "optional": spec.nullable,
            "name": _DECIMAL,
            "version": 1,
            "parameters": {"scale": str(scale), "connect.decimal.precision": str(precision)},
        }
    elif base in ("int", "mediumint"):
        out = {"type": "int32", "optional": spec.nullable}
    elif base in ("tinyint", "smallint"):
        out = {"type": "int16", "optional": spec.nullable}
    elif base == "bigint":
        out = {"type": "int64", "optional": spec.nullable}
    elif base == "double":
        out = {"type": "double", "optional": spec.nullable}
    elif base == "float":
        out = {"type": "float", "optional": spec.nullable}
    elif base in ("varchar", "char", "text"):
        out = {"type": "string", "optional": spec.nullable}
    elif base == "json":
        out = {"type": "string", "optional": spec.nullable, "name": "io.debezium.data.Json", "version": 1}
    elif base in ("blob", "binary", "varbinary"):
        out = {"type": "bytes", "optional": spec.nullable}
    elif base == "datetime":
        name = "io.debezium.time.MicroTimestamp" if _fsp(spec) > 3 else "io.debezium.time.Timestamp"
        out = {"type": "int64", "optional": spec.nullable, "name": name, "version": 1}
    elif base == "timestamp":
        out = {"type": "string", "optional": spec.nullable, "name": "io.debezium.time.ZonedTimestamp", "version": 1}
    elif base == "date":
        out = {"type": "int32", "optional": spec.nullable, "name": "io.debezium.time.Date", "version": 1}
    elif base == "time":
        out = {"type": "int64", "optional": spec.nullable, "name": "io.debezium.time.MicroTime", "version": 1}
    else:
        raise ValueError(f"no Connect schema for column {spec.name!r} ({spec.mysql_type})")
    out["field"] = spec.name
    return out


def _unscaled_base64(value: Decimal, scale: int) -> str:
    """Connect Decimal: base64 of the unscaled value's minimal big-endian two's complement."""
    sign, digits, exponent = value.as_tuple()
    assert isinstance(exponent, int)
    shift = exponent + scale
    magnitude = int("".join(map(str, digits)) or "0")
    if shift >= 0:
        magnitude *= 10**shift
    elif magnitude % 10**-shift == 0:
        magnitude //= 10**-shift
    else:
        raise ValueError(f"{value} has more than {scale} fraction digits")
    unscaled = -magnitude if sign else magnitude
    length = (unscaled if unscaled >= 0 else ~unscaled).bit_length() // 8 + 1
    return base64.b64encode(unscaled.to_bytes(length, "big", signed=True)).decode("ascii")


def _connect_value(spec: ColumnSpec, value: Value) -> Any:
    """A column value as JsonConverter writes the connector's Connect value."""
    if value is None:
        return None
    base = _base_type(spec)
    if base == "bigint unsigned" or base.startswith("decimal"):
        number = Decimal(int(value)) if isinstance(value, int) else value
        if not isinstance(number, Decimal):
            raise ValueError(f"column {spec.name!r}: expected a number, got {value!r}")
        return _unscaled_base64(number, _decimal_params(spec)[1])
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return _json_int(value)
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, SqlTime):
        return value.micros  # MicroTime: a signed duration in microseconds
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            micros = (value - _LOCAL_EPOCH) // dt.timedelta(microseconds=1)
            return micros if _fsp(spec) > 3 else micros // 1000
        return _zoned_text(value.astimezone(dt.UTC), _fsp(spec))
    if isinstance(value, dt.date):
        return (value - _EPOCH_DATE).days
    raise ValueError(f"no Connect value for {type(value).__name__}")


def _zoned_text(value: dt.datetime, fsp: int) -> str:
    """io.debezium.time.ZonedTimestamp: ISO 8601 in UTC, the fraction as wide as the column's precision."""
    text = value.replace(tzinfo=None).isoformat(timespec="seconds")
    if fsp:
        text += "." + f"{value.microsecond:06d}"[:fsp]
    return text + "Z"


def _connect_row(image: Image | None) -> dict[str, Any] | None:
    if image is None:
        return None
    return {name: _connect_value(_spec(name), value) for name, value in image.items()}


_SOURCE_SCHEMA: Final[dict[str, Any]] = {
    "type": "struct",
    "optional": False,
    "name": "io.debezium.connector.mysql.Source",
    "field": "source",
    "fields": [
        {"type": "string", "optional": False, "field": "version"},
        {"type": "string", "optional": False, "field": "connector"},
        {"type": "string", "optional": False, "field": "name"},
        {"type": "int64", "optional": False, "field": "ts_ms"},
        {
            "type": "string",
            "optional": True,
            "name": "io.debezium.data.Enum",
            "version": 1,
            "parameters": {"allowed": "true,last,false,incremental"},
            "default": "false",
            "field": "snapshot",
        },
        {"type": "string", "optional": False, "field": "db"},
        {"type": "string", "optional": True, "field": "sequence"},
        {"type": "string", "optional": True, "field": "table"},
        {"type": "int64", "optional": False, "field": "server_id"},
        {"type": "string", "optional": True, "field": "gtid"},
        {"type": "string", "optional": False, "field": "file"},
        {"type": "int64", "optional": False, "field": "pos"},
        {"type": "int32", "optional": False, "field": "row"},
        {"type": "int64", "optional": True, "field": "thread"},
        {"type": "string", "optional": True, "field": "query"},
    ],
}
_TRANSACTION_SCHEMA: Final[dict[str, Any]] = {
    "type": "struct",
    "optional": True,
    "name": "event.block",
    "version": 1,
    "field": "transaction",
    "fields": [
        {"type": "string", "optional": False, "field": "id"},
        {"type": "int64", "optional": False, "field": "total_order"},
        {"type": "int64", "optional": False, "field": "data_collection_order"},
    ],
}
_DEBEZIUM_OPS: Final = {"INSERT": "c", "UPDATE": "u", "DELETE": "d"}


def _value_schema(change: Change, field: str | None) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "struct",
        "optional": field is not None,
        "name": f"{_SERVER}.{change.database}.{change.table}.Value",
        "fields": [_connect_field(_spec(name)) for name in _columns(change)],
    }
    if field is not None:
        schema["field"] = field
    return schema


def render_debezium(change: Change, ctx: RenderContext) -> bytes:
    schema = {
        "type": "struct",
        "optional": False,
        "name": f"{_SERVER}.{change.database}.{change.table}.Envelope",
        "version": 1,
        "fields": [
            _value_schema(change, "before"),
            _value_schema(change, "after"),
            _SOURCE_SCHEMA,
            {"type": "string", "optional": False, "field": "op"},
            {"type": "int64", "optional": True, "field": "ts_ms"},
            _TRANSACTION_SCHEMA,
        ],
    }
    payload = {
        "before": _connect_row(change.before),
        "after": _connect_row(change.after),
        "source": {
            "version": _CONNECTOR_VERSION,
            "connector": "mysql",
            "name": _SERVER,
            "ts_ms": change.ts_ms,
            "snapshot": "false",
            "db": change.database,
            "sequence": None,
            "table": change.table,
            "server_id": 1,
            "gtid": None,
            "file": change.binlog_file,
            "pos": change.binlog_pos,
            "row": 0,
            "thread": None,
            "query": None,
        },
        "op": _DEBEZIUM_OPS[change.op],
        "ts_ms": change.ts_ms + 350,
        "transaction": None,
    }
    return _dumps({"schema": schema, "payload": payload})


def render_debezium_smt(change: Change, ctx: RenderContext) -> bytes:
    """ExtractNewRecordState: the new row (the deleted row for a delete) plus ``__`` metadata."""
    deleted = change.op == "DELETE"
    row = _connect_row(change.before if deleted else change.after)
    assert row is not None
    schema = _value_schema(change, None)
    schema["fields"] += [
        {"type": "string", "optional": True, "field": "__db"},
        {"type": "string", "optional": True, "field": "__table"},
        {"type": "int64", "optional": True, "field": "__source_ts_ms"},
        {"type": "string", "optional": True, "field": "__deleted"},
    ]
    payload = {
        **row,
        "__db": change.database,
        "__table": change.table,
        "__source_ts_ms": change.ts_ms,
        "__deleted": "true" if deleted else "false",
    }
    return _dumps({"schema": schema, "payload": payload})


# ------------------------------------------------------------------ parse configuration


def parse_options(format_id: str) -> dict[str, Any]:
    """Debezium puts the key in the Kafka record key: name it so events carry ``primary_key``."""
    if format_id in ("debezium-json", "debezium-smt"):
        return {"options": {"primary_key": ",".join(PRIMARY_KEY)}}
    return {}
