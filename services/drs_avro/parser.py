"""``drs-avro``: Huawei Cloud DRS Avro messages, read with the user's own schema.

DRS publishes its Avro schema only as a download (``record.rar``), so binlake
ships none: the user points it at their ``.avsc`` (CLI ``--avro-schema``; the
parsed JSON arrives as ``ctx.options["avro_schema"]``). A message is plain Avro
binary of that record (no container header, no single-object or registry
framing). The schema may be one record, or a list of named types as in
Alibaba DTS's ``Record.avsc``; from a list the record named by option
``avro_record`` is used, else the record named ``Record``, else the last one.
Parsed schemas are cached by the schema object and by its key-sorted JSON text.
Messages are decoded by the kernel's Avro decoder (``AvroDecoder``, compiled
once per parsed schema), exactly as fastavro's ``schemaless_reader`` reads them;
a schema it does not compile (a logical type fastavro converts, such as
``timestamp-millis`` or ``decimal``) is read with fastavro.

The decoded record is mapped by field names, case-insensitively
(docs/formats/drs-avro.md has the full table):

- A record with ``operation`` (or ``opType``) and ``objectName`` / ``fields`` /
  ``beforeImages`` / ``afterImages`` is read like Alibaba DTS's record, which
  DRS's most likely resembles: see ``services/drs_avro/dts.py``.
- A record with ``type`` and ``data`` / ``old`` / ``isDdl`` is the DRS JSON
  flat shape carried in Avro and goes through the drs-json reader
  (``services/drs_json/parser.py``): rows are maps of column to value; a
  DELETE's row is taken from ``data``, or from ``old`` when ``data`` is empty.
  Avro doubles become exact decimals of their shortest text, Avro bytes become
  DRS's byte-list text (so typed binary columns read them back exactly).

Order key: major = the record's ``id`` (DRS's monotonically increasing event
sequence; required), minor = the input offset, then the row index (always 0
for the DTS-like record, which holds one row); as for ``drs-json``, the offset
decides only between records that share an ``id``.
"""

from __future__ import annotations

import datetime as _dt
import io
import math
import uuid
from decimal import Decimal
from typing import Any, Final

import fastavro
import orjson

from binlake.services.drs_avro.dts import parse_dts_record
from binlake.services.drs_json.parser import parse_drs_doc
from binlake.shared.kernel._kernel import AvroDecoder
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import CONFIG, MALFORMED, WRONG_FORMAT, RejectError, decoder_problem
from binlake.shared.parsing.jsondoc import InexactNumber
from binlake.shared.parsing.result import Parsed

FORMAT_ID: Final = "drs-avro"
PARSER_VERSION: Final = "1"

_DTS_MARKERS: Final = frozenset({"objectname", "fields", "beforeimages", "afterimages"})
_FLAT_MARKERS: Final = frozenset({"data", "old", "isddl", "mysqltype", "columntype"})
_FLAT_NAMES: Final = {
    name.lower(): name
    for name in (
        "data", "old", "type", "opType", "isDdl", "sql", "es", "ts", "id", "database", "table", "schema",
        "dbType", "pkNames", "mysqlType", "columnType", "sqlType", "gtid",
    )
}  # fmt: skip
_CACHE_LIMIT: Final = 64
_DTS: Final = "dts"
_FLAT: Final = "flat"
_NEITHER: Final = "neither"
_LAYOUTS: dict[tuple[Any, ...], tuple[str, tuple[str, ...]]] = {}
"""``_layout`` by a record's field names."""
_by_identity: dict[int, tuple[Any, Any]] = {}
_by_text: dict[bytes, Any] = {}
_decoders: dict[int, tuple[Any, AvroDecoder | None]] = {}
"""Each parsed schema's decoder (None: fastavro reads it), by the schema object (kept alive here)."""


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    record = decode(raw, writer_schema(ctx))
    if not isinstance(record, dict):
        raise RejectError(WRONG_FORMAT, "the configured Avro schema does not decode to a record")
    layout = _LAYOUTS.get(tuple(record))
    if layout is None:
        layout = _layout(record)
    shape, names = layout
    if shape == _DTS:
        return parse_dts_record(dict(zip(names, record.values(), strict=True)), ctx, FORMAT_ID)
    if shape == _FLAT:
        doc: dict[str, Any] = {}
        for index, value in enumerate(record.values()):
            doc[names[index]] = value if _as_is(value) else _plain(value)
        return _parse_flat(doc, ctx)
    return _parse_lowered({str(key).lower(): value for key, value in record.items()}, ctx)


def _parse_lowered(lowered: dict[str, Any], ctx: ParseContext) -> Parsed:
    """A record by its lower-cased field names (what ``_layout`` decides once per schema, for any record)."""
    if ("operation" in lowered or "optype" in lowered) and not _DTS_MARKERS.isdisjoint(lowered):
        return parse_dts_record(lowered, ctx, FORMAT_ID)
    if ("type" in lowered or "optype" in lowered) and not _FLAT_MARKERS.isdisjoint(lowered):
        return _parse_flat({_FLAT_NAMES.get(key, key): _plain(value) for key, value in lowered.items()}, ctx)
    raise RejectError(
        WRONG_FORMAT,
        "the decoded record has neither 'operation' with 'objectName'/'fields'/'afterImages' (DTS-like) nor "
        f"'type' with 'data'/'old' (flat); its fields are {sorted(lowered)[:20]}",
    )


def _parse_flat(doc: dict[str, Any], ctx: ParseContext) -> Parsed:
    try:
        return parse_drs_doc(doc, ctx, FORMAT_ID, "either")
    except InexactNumber as exc:  # cannot happen: _plain turns every float into a Decimal
        raise RejectError(MALFORMED, f"inexact number in field {exc}") from None


def _layout(record: dict[Any, Any]) -> tuple[str, tuple[str, ...]]:
    """``_parse_lowered``'s decision for a record with these field names, made once (a schema's records all
    have the same): DTS-like with the lower-cased names, flat with the flat shape's names, or neither
    (also when two names fold to one, ``Type`` and ``type``: ``_parse_lowered`` reads each such record)."""
    lowered = [str(key).lower() for key in record]
    layout: tuple[str, tuple[str, ...]] = (_NEITHER, ())
    if len(set(lowered)) == len(lowered):
        if ("operation" in lowered or "optype" in lowered) and not _DTS_MARKERS.isdisjoint(lowered):
            layout = (_DTS, tuple(lowered))
        elif ("type" in lowered or "optype" in lowered) and not _FLAT_MARKERS.isdisjoint(lowered):
            layout = (_FLAT, tuple(_FLAT_NAMES.get(key, key) for key in lowered))
    if len(_LAYOUTS) >= _CACHE_LIMIT:
        _LAYOUTS.clear()
    _LAYOUTS[tuple(record)] = layout
    return layout


# ------------------------------------------------------------------ the schema


def writer_schema(ctx: ParseContext) -> Any:
    """The parsed record schema from ``ctx.options`` (cached)."""
    schema = ctx.options.get("avro_schema")
    if schema is None:
        raise RejectError(
            CONFIG,
            "drs-avro needs the DRS Avro record schema: set --avro-schema FILE.avsc (CLI) "
            "or BINLAKE_AVRO_SCHEMA_FILE (service) "
            "(option 'avro_schema')",
        )
    record_name = ctx.options.get("avro_record")
    hit = _by_identity.get(id(schema))
    if hit is not None and hit[0] is schema and record_name is None:
        return hit[1]
    if isinstance(schema, str | bytes):
        try:
            schema = orjson.loads(schema)
        except orjson.JSONDecodeError as exc:
            raise RejectError(CONFIG, f"option 'avro_schema' is not a JSON Avro schema: {exc}") from None
    try:
        text = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS) + str(record_name).encode()
    except TypeError as exc:
        raise RejectError(CONFIG, f"option 'avro_schema' is not a JSON Avro schema: {exc}") from None
    parsed = _by_text.get(text)
    if parsed is None:
        parsed = _select(_parse_schema(schema), record_name)
        if len(_by_text) >= _CACHE_LIMIT:
            _by_text.clear()
        _by_text[text] = parsed
    if record_name is None:
        if len(_by_identity) >= _CACHE_LIMIT:
            _by_identity.clear()
        _by_identity[id(ctx.options["avro_schema"])] = (ctx.options["avro_schema"], parsed)
    return parsed


def _parse_schema(schema: Any) -> Any:
    try:
        return fastavro.parse_schema(schema)
    except Exception as exc:  # noqa: BLE001 - fastavro raises several types for an invalid schema
        raise RejectError(CONFIG, f"option 'avro_schema' is not a valid Avro schema: {exc}") from None


def _select(parsed: Any, record_name: Any) -> Any:
    """The message record from a parsed schema that may be a list of named types."""
    if not isinstance(parsed, list):
        return parsed
    records = [item for item in parsed if isinstance(item, dict) and item.get("type") == "record"]
    if record_name is not None:
        wanted = str(record_name)
        for item in records:
            name = str(item.get("name", ""))
            if wanted in (name, name.rsplit(".", 1)[-1]):
                return item
        raise RejectError(CONFIG, f"option 'avro_record' {wanted!r} names no record of the Avro schema")
    for item in records:
        if str(item.get("name", "")).rsplit(".", 1)[-1].lower() == "record":
            return item
    if not records:
        raise RejectError(CONFIG, "the Avro schema list holds no record type")
    return records[-1]


# ----------------------------------------------------------------- decoding


def decode(raw: bytes, schema: Any) -> Any:
    """One Avro binary record; union branches of named types come as (name, value)."""
    decoder = _decoder(schema)
    if decoder is None:
        record, end = _fastavro_decode(raw, schema)
    else:
        try:
            record, end = decoder.decode(raw)
        except ValueError as exc:  # the problem and its byte offset, never the bytes
            raise RejectError(
                MALFORMED, f"not a record of the configured Avro schema{_framing_hint(raw)}: {exc}"
            ) from None
    left = len(raw) - end
    if left:
        raise RejectError(
            MALFORMED,
            f"{left} byte(s) left after the record: wrong schema or framed message{_framing_hint(raw)}",
        )
    return record


def _decoder(schema: Any) -> AvroDecoder | None:
    """The kernel's decoder of a parsed schema (cached), or None for a schema it does not compile."""
    hit = _decoders.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    decoder: AvroDecoder | None
    try:
        decoder = AvroDecoder(orjson.dumps(schema).decode())
    except (TypeError, ValueError):  # a logical type fastavro converts, or no JSON: fastavro reads it
        decoder = None
    if len(_decoders) >= _CACHE_LIMIT:
        _decoders.clear()
    _decoders[id(schema)] = (schema, decoder)
    return decoder


def _fastavro_decode(raw: bytes, schema: Any) -> tuple[Any, int]:
    stream = io.BytesIO(raw)
    try:
        record = fastavro.schemaless_reader(stream, schema, None, return_record_name=True)
    except Exception as exc:  # noqa: BLE001 - corrupt bytes raise EOFError, IndexError, UnicodeDecodeError...
        raise RejectError(
            MALFORMED, f"not a record of the configured Avro schema{_framing_hint(raw)}: {decoder_problem(exc)}"
        ) from None
    return record, stream.tell()


def _framing_hint(raw: bytes) -> str:
    if raw[:2] == b"\xc3\x01":
        return " (it starts like Avro single-object encoding; DRS sends plain Avro binary)"
    if raw[:4] == b"Obj\x01":
        return " (it is an Avro container file; DRS sends plain Avro binary)"
    return ""


_BYTE_TEXTS: Final = tuple(str(byte) for byte in range(256))
"""Each byte value's decimal text (``_plain``'s byte lists)."""


def _plain(value: Any) -> Any:
    """A decoded Avro value as the JSON the drs-json reader expects. A map, record or array whose items are
    all as they are is returned itself: only what changes is copied (the decoder's objects are this
    message's own)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is dict:
        mapping: dict[Any, Any] = value
        for key, item in mapping.items():
            if not _as_is(item) or type(key) is not str:
                return {str(key): item if _as_is(item) else _plain(item) for key, item in mapping.items()}
        return mapping
    if kind is list:
        items: list[Any] = value
        for item in items:
            if not _as_is(item):
                return [item if _as_is(item) else _plain(item) for item in items]
        return items
    if kind is bytes:
        data: bytes = value
        return "[" + ", ".join([_BYTE_TEXTS[byte] for byte in data]) + "]"  # DRS's byte list: "[106, 103]"
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return _plain(value[1])  # a named union branch: (type name, value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else repr(value)
    if isinstance(value, bytes):
        return "[" + ", ".join(str(byte) for byte in value) + "]"
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, _dt.date | _dt.time | uuid.UUID):
        return str(value) if isinstance(value, uuid.UUID) else value.isoformat()  # Avro logical types
    return value


def _as_is(value: Any) -> bool:
    """Whether ``_plain`` returns ``value`` unchanged by its exact type (nearly every value)."""
    kind = type(value)
    return kind is str or kind is int or kind is bool or value is None
