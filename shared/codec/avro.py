"""The canonical event in Avro: schema loading, encoding, decoding, single-object framing.

Every released schema version lives in ``shared/event/schemas/`` and is never
edited after release; a change makes a new file. Messages on the unified topic
use Avro single-object encoding (``C3 01`` + the writer schema's 8-byte
CRC-64-AVRO fingerprint + the body), so any consumer finds the writer schema by
fingerprint (``schema_by_fingerprint``) and can resolve it to its reader schema.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
from decimal import Decimal
from functools import cache
from importlib import resources
from typing import Any, Final

import fastavro
from fastavro.schema import to_parsing_canonical_form
from fastavro.types import Schema

from binlake.shared.codec.fingerprint import fingerprint_bytes
from binlake.shared.errors import BinlakeError
from binlake.shared.event.model import ChangeEvent, Column, Ddl, Origin, Source
from binlake.shared.event.values import BigInt, Image, SqlTime, Unparsed, Value, decimal_text
from binlake.shared.parsing.temporal import EPOCH, EPOCH_DATE

try:
    from binlake.shared.kernel._kernel import Encoder
except ImportError as exc:  # the kernel writes every record: without it nothing can run
    raise ImportError(
        "binlake's kernel (shared/kernel, Rust) is not built: run `make native` in a clone, or reinstall "
        "binlake with cargo on PATH (docs/kernel.md)"
    ) from exc

CURRENT_VERSION: Final = 1
MAGIC: Final = b"\xc3\x01"
_NS: Final = "io.binlake.event.v1."
_LOCAL_EPOCH: Final = _dt.datetime(1970, 1, 1)
_MICRO: Final = _dt.timedelta(microseconds=1)


class DecodeError(BinlakeError):
    """Bytes that are not a canonical event this build can read."""


@cache
def schema_json(version: int = CURRENT_VERSION) -> dict[str, Any]:
    text = resources.files("binlake.shared.event").joinpath(f"schemas/change_event.v{version}.avsc").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def parsed_schema(version: int = CURRENT_VERSION) -> Schema:
    return fastavro.parse_schema(schema_json(version))


@cache
def fingerprint(version: int = CURRENT_VERSION) -> bytes:
    return fingerprint_bytes(to_parsing_canonical_form(parsed_schema(version)))


def released_versions() -> list[int]:
    names = [p.name for p in resources.files("binlake.shared.event").joinpath("schemas").iterdir()]
    return sorted(int(n.split(".v")[1].split(".")[0]) for n in names if n.startswith("change_event.v"))


@cache
def schema_by_fingerprint() -> dict[bytes, int]:
    """Fingerprint to released schema version."""
    return {fingerprint(v): v for v in released_versions()}


# ------------------------------------------------------------------ values


def _encode_value(value: Value) -> Any:
    # Tuple notation names the union branch, so fastavro never guesses
    # (a bool would otherwise match "long", a str "bytes"...).
    if value is None:
        return None
    kind = type(value)
    if kind is str:
        return ("string", value)
    if kind is int:
        return ("long", value)
    if kind is bool:
        return ("boolean", value)
    if kind is float:
        return ("double", value)
    if kind is Decimal:
        assert isinstance(value, Decimal)
        return (_NS + "Decimal", {"digits": decimal_text(value)})
    if kind is bytes:
        return ("bytes", value)
    if kind is BigInt:
        return (_NS + "BigInteger", {"digits": int.__repr__(value)})
    if kind is _dt.datetime:
        assert isinstance(value, _dt.datetime)
        if value.tzinfo is None:
            return (_NS + "LocalDateTime", {"micros": (value - _LOCAL_EPOCH) // _MICRO})
        return (_NS + "Instant", {"micros": (value - EPOCH) // _MICRO})
    if kind is _dt.date:
        assert isinstance(value, _dt.date)
        return (_NS + "Date", {"days": (value - EPOCH_DATE).days})
    if kind is SqlTime:
        assert isinstance(value, SqlTime)
        return (_NS + "Time", {"micros": value.micros})
    if kind is Unparsed:
        assert isinstance(value, Unparsed)
        return (_NS + "Unparsed", {"text": value.text})
    raise TypeError(f"not a canonical value: {type(value).__name__}")


def _decode_value(value: Any) -> Value:
    if isinstance(value, tuple):
        name, body = value
        short = name.rsplit(".", 1)[-1]
        if short == "Decimal":
            return Decimal(body["digits"])
        if short == "BigInteger":
            return BigInt(int(body["digits"]))
        if short == "Date":
            return EPOCH_DATE + _dt.timedelta(days=body["days"])
        if short == "Time":
            return SqlTime(body["micros"])
        if short == "LocalDateTime":
            return _LOCAL_EPOCH + _dt.timedelta(microseconds=body["micros"])
        if short == "Instant":
            return EPOCH + _dt.timedelta(microseconds=body["micros"])
        if short == "Unparsed":
            return Unparsed(body["text"])
        raise DecodeError(f"unknown value branch {name}")
    return value  # type: ignore[no-any-return]


def _encode_image(image: Image | None) -> dict[str, Any] | None:
    if image is None:
        return None
    return {name: _encode_value(value) for name, value in image.items()}


def _decode_image(image: dict[str, Any] | None) -> Image | None:
    if image is None:
        return None
    return {name: _decode_value(value) for name, value in image.items()}


# ------------------------------------------------------------------ records


def to_record(event: ChangeEvent) -> dict[str, Any]:
    s = event.source
    return {
        "op": event.op,
        "source": {
            "format": s.format,
            "db_type": s.db_type,
            "database": s.database,
            "schema": s.schema,
            "table": s.table,
            "tenant": s.tenant,
            "binlog_file": s.binlog_file,
            "binlog_pos": s.binlog_pos,
            "gtid": s.gtid,
            "scn": s.scn,
            "checkpoint": s.checkpoint,
            "transaction_id": s.transaction_id,
            "sequence": s.sequence,
        },
        "order_key": event.order_key,
        "ts_ms": event.ts_ms,
        "ingest_ts_ms": event.ingest_ts_ms,
        "primary_key": event.primary_key,
        "columns": [
            {
                "name": c.name,
                "source_type": c.source_type,
                "logical_type": c.logical_type,
                "precision": c.precision,
                "scale": c.scale,
                "inferred": c.inferred,
            }
            for c in event.columns
        ],
        "before": _encode_image(event.before),
        "after": _encode_image(event.after),
        "changed_columns": event.changed_columns,
        "ddl": None if event.ddl is None else {"sql": event.ddl.sql, "kind": event.ddl.kind},
        "origin": {
            "topic": event.origin.topic,
            "partition": event.origin.partition,
            "offset": event.origin.offset,
            "row": event.origin.row,
        },
    }


def from_record(record: dict[str, Any]) -> ChangeEvent:
    ddl = record["ddl"]
    return ChangeEvent(
        op=record["op"],
        source=Source(**record["source"]),
        order_key=record["order_key"],
        ts_ms=record["ts_ms"],
        ingest_ts_ms=record["ingest_ts_ms"],
        primary_key=list(record["primary_key"]),
        columns=[Column(**c) for c in record["columns"]],
        before=_decode_image(record["before"]),
        after=_decode_image(record["after"]),
        changed_columns=record["changed_columns"],
        ddl=None if ddl is None else Ddl(**ddl),
        origin=Origin(**record["origin"]),
    )


@cache
def encoder() -> Encoder:
    """The kernel's writer of the current schema (``shared/kernel/src/encode.rs``): the one Avro writer of
    canonical events, and of their record keys (``encoder().record(event)``: key and value at once)."""
    return Encoder(fingerprint())


def encode_body(event: ChangeEvent) -> bytes:
    """The Avro binary body (no framing) under the current schema."""
    return encoder().body(event)


def encode_body_reference(event: ChangeEvent) -> bytes:
    """The same body through fastavro's generic writer: the reference the kernel's writer is tested against."""
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parsed_schema(), to_record(event))
    return out.getvalue()


def encode(event: ChangeEvent) -> bytes:
    """Avro single-object encoding: ``C3 01`` + fingerprint + body."""
    return encoder().value(event)


def decode(message: bytes) -> ChangeEvent:
    """Read a single-object encoded event written with any released schema."""
    if len(message) < 10 or message[:2] != MAGIC:
        raise DecodeError("not Avro single-object encoding: expected the C3 01 marker")
    version = schema_by_fingerprint().get(message[2:10])
    if version is None:
        raise DecodeError(f"unknown schema fingerprint {message[2:10].hex()}: is this build older than the writer?")
    try:
        record = fastavro.schemaless_reader(
            io.BytesIO(message[10:]),
            parsed_schema(version),
            parsed_schema(),
            return_record_name=True,
            return_record_name_override=True,
        )
    except (EOFError, ValueError, IndexError, UnicodeDecodeError) as exc:
        raise DecodeError(f"corrupt Avro body: {exc}") from exc
    assert isinstance(record, dict)
    return from_record(record)
