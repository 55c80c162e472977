"""Changelog rows -> the events the mirror without Spark applies: row events with their images, and the
TRUNCATE and DDL events (no Spark, no I/O).

An event's body (the changelog's ``event_avro``, the topic's single-object message) is read by the native
fast lane (``AvroShape``) with the image values' union *tagged*: each value comes as ``(branch index,
value)``, so a ``Date`` is told from a ``Time`` (both a record of one number) without naming every record.
A body the native side declines, or one written with another schema version, is read by fastavro and put
into the same shape (``_Native``): either way an event is what fastavro reads.

An image (``Image``) maps a column to its tagged value; a column absent from it is unknown, not NULL.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final, TypeAlias

import fastavro

from binlake.shared.codec import avro
from binlake.shared.event.model import ROW_OPS
from binlake.spark_sink.changelog import native_envelope
from binlake.spark_sink.events.order import SEPARATOR
from binlake.spark_sink.mirror.control_events import ControlRow
from binlake.spark_sink.mirror.plan import ColumnDesc, Descriptor

HEADER: Final = 10
"""The single-object header: ``C3 01`` and the writer schema's 8-byte fingerprint."""
Tagged: TypeAlias = tuple[int, Any]
"""An image value: its branch of the value union (``value_kinds``) and the branch's value (a record: a tuple)."""
Image: TypeAlias = dict[str, Tagged]
_SKIPPED: Final = frozenset({"source", "ingest_ts_ms", "changed_columns"})
"""Fields the mirror does not read (the changelog row has the source table as a column)."""
_RAW: Final = frozenset({"columns"})
"""Fields the native reader returns as their encoded bytes: a table's events repeat one column descriptor, so
``events`` interns the bytes and builds each distinct descriptor once (``_columns``), a third of the reading."""


class CorruptBody(ValueError):
    """A changelog body that no released schema reads: the changelog is damaged (its writer checks every body)."""


@dataclass(slots=True)  # not frozen: a frozen dataclass' __init__ costs a batch of 50,000 events a second
class RowEvent:
    """One row event of a source table, in the order the changelog holds it."""

    table: str
    op: str
    seq: str
    """The event's sequence (``spark_sink.events.order``)."""
    origin: str
    """``topic#partition#offset#row``: the change's identity."""
    ts_ms: int | None
    descriptor: Descriptor
    before: Image | None
    after: Image | None


@dataclass(slots=True)
class Events:
    """A batch's events: row events per table (changelog order), control events, and each table's descriptors
    in the order their first events come (``apply.descriptors``' order: the plan meets them so)."""

    rows: dict[str, list[RowEvent]]
    control: list[ControlRow]
    descriptors: dict[str, list[Descriptor]]


@cache
def value_kinds() -> tuple[str, ...]:
    """The value union's branches by index: ``null``, ``boolean``, ``long``... ``Decimal``, ``Date``..."""
    after = next(f for f in avro.schema_json()["fields"] if f["name"] == "before")["type"]
    image = next(t for t in after if isinstance(t, dict))
    return tuple(b if isinstance(b, str) else b["name"] for b in image["values"])


@cache
def _reader(fingerprint: bytes) -> tuple[Any, Any, dict[str, Any]]:
    """The native reader of writer schema ``fingerprint`` (None without the fast lane), its parsed schema, and
    the current schema's JSON (fastavro reads into it, then ``_Native`` shapes the result)."""
    version = avro.schema_by_fingerprint()[fingerprint]
    shape = None
    if version == avro.CURRENT_VERSION:
        try:
            from binlake.shared.fastlane._native import AvroShape

            notation = native_envelope.notation(avro.schema_json(), {}, skip=_SKIPPED, raw=_RAW, tag=True)
            shape = AvroShape(notation)
        except (ImportError, ValueError):
            shape = None
    return shape, avro.parsed_schema(version), avro.schema_json()


class _Native:
    """fastavro's record of an event in the native reader's shape: records as tuples of their fields, enums as
    symbol indexes, tagged unions as (branch, value)."""

    def __init__(self, schema: dict[str, Any]) -> None:
        self._named: dict[str, Any] = {}
        native_envelope.register(schema, self._named)  # a branch may name a type defined in a null field
        self._schema = schema

    def event(self, record: dict[str, Any]) -> tuple[Any, ...]:
        value = self.value(self._schema, record)
        assert isinstance(value, tuple)
        return value

    def value(self, avro_type: Any, value: Any) -> Any:
        named = self._named
        if isinstance(avro_type, list):
            if not native_envelope.tagged(avro_type):
                if value is None:
                    return None
                branch = next(t for t in avro_type if t != "null")
                return self.value(branch, value)
            index = self._branch(avro_type, value)
            if isinstance(value, tuple):  # (record name, record): fastavro's ``return_record_name``
                value = value[1]
            return (index, self.value(avro_type[index], value))
        if isinstance(avro_type, str):
            return self.value(named[avro_type], value) if avro_type in named else value
        kind = avro_type["type"]
        if isinstance(kind, (dict, list)):
            return self.value(kind, value)
        if kind == "record":
            named[avro_type["name"]] = avro_type
            if value is None:
                return None
            return tuple(self.value(f["type"], value.get(f["name"])) for f in avro_type["fields"])
        if kind == "enum":
            named[avro_type["name"]] = avro_type
            return None if value is None else list(avro_type["symbols"]).index(value)
        if kind == "array":
            return None if value is None else [self.value(avro_type["items"], v) for v in value]
        if kind == "map":
            return None if value is None else {k: self.value(avro_type["values"], v) for k, v in value.items()}
        return value

    def _branch(self, union: list[Any], value: Any) -> int:
        names = [b if isinstance(b, str) else b.get("name") for b in union]
        if value is None:
            return names.index("null")
        if isinstance(value, tuple):
            name = str(value[0]).rsplit(".", 1)[-1]
            return names.index(name)
        for python_type, candidates in _PRIMITIVE_BRANCHES:
            if isinstance(value, python_type):
                return next(names.index(c) for c in candidates if c in names)
        raise CorruptBody(f"a value fastavro read as {type(value).__name__} fits no branch of {names}")


_PRIMITIVE_BRANCHES: Final = (
    (bool, ("boolean",)),  # before int: a bool is an int in Python
    (int, ("long", "int")),
    (float, ("double", "float")),
    (str, ("string",)),
    (bytes, ("bytes",)),
)


def decode_bodies(bodies: Sequence[bytes], *, native: bool = True) -> list[tuple[Any, ...]]:
    """Each body (a single-object message) as the native reader's tuple of the current schema's fields (its
    ``columns`` as their encoded bytes where the native reader read it; ``native`` False: fastavro's, all)."""
    out: list[tuple[Any, ...] | None] = [None] * len(bodies)
    by_fingerprint: dict[bytes, list[int]] = {}
    for i, body in enumerate(bodies):
        by_fingerprint.setdefault(bytes(body[2:HEADER]), []).append(i)
    known = avro.schema_by_fingerprint()
    for fingerprint, indexes in by_fingerprint.items():
        if fingerprint not in known:
            raise CorruptBody(f"a changelog body of unknown schema fingerprint {fingerprint.hex()}")
        shape, writer, current = _reader(fingerprint)
        read: list[Any] = [None] * len(indexes)
        if shape is not None and native:
            read = shape.read_many([bodies[i] for i in indexes], HEADER)
        for i, value in zip(indexes, read, strict=True):
            out[i] = value if value is not None else _fastavro(bodies[i], writer, current)
    return [v for v in out if v is not None]


def _fastavro(body: bytes, writer: Any, current: dict[str, Any]) -> tuple[Any, ...]:
    try:
        record = fastavro.schemaless_reader(
            io.BytesIO(body[HEADER:]),
            writer,
            avro.parsed_schema(),
            return_record_name=True,
            return_record_name_override=True,
        )
    except (EOFError, ValueError, IndexError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise CorruptBody(f"a changelog body fastavro cannot read: {exc}") from exc
    if not isinstance(record, dict):
        raise CorruptBody("a changelog body that is no record")
    return _Native(current).event(record)


@cache
def _columns_reader() -> tuple[Any, Any]:
    """The native reader of an encoded ``columns`` field (None without the fast lane), and fastavro's schema."""
    columns_type = next(f["type"] for f in avro.schema_json()["fields"] if f["name"] == "columns")
    try:
        from binlake.shared.fastlane._native import AvroShape

        shape: Any = AvroShape(native_envelope.notation(columns_type, {}))
    except (ImportError, ValueError):
        shape = None
    return shape, fastavro.parse_schema(columns_type)


def _columns(encoded: bytes) -> list[tuple[Any, ...]]:
    """An encoded ``columns`` field (the native reader's ``_RAW``) as a list of ``Column`` tuples."""
    shape, schema = _columns_reader()
    found = shape.read_many([encoded], 0)[0] if shape is not None else None
    if found is not None:
        return list(found)
    try:
        records = fastavro.schemaless_reader(io.BytesIO(encoded), schema, schema)
    except (EOFError, ValueError, IndexError, UnicodeDecodeError, KeyError, TypeError) as exc:
        raise CorruptBody(f"a changelog body whose column descriptors fastavro cannot read: {exc}") from exc
    assert isinstance(records, list)
    return [
        (c["name"], c["source_type"], c["logical_type"], c["precision"], c["scale"], c["inferred"]) for c in records
    ]


@cache
def _field_index() -> dict[str, int]:
    return {f["name"]: i for i, f in enumerate(avro.schema_json()["fields"])}


@cache
def _ops() -> tuple[str, ...]:
    return tuple(avro.schema_json()["fields"][_field_index()["op"]]["type"]["symbols"])


class Descriptors:
    """A batch's column descriptors, each distinct one built once: interned by its encoded ``columns`` (or
    fastavro's list of them) and key; two encodings describing the same columns (another source type, an
    inferred flag) are one descriptor."""

    def __init__(self) -> None:
        self._interned: dict[tuple[Any, ...], Descriptor] = {}
        self._known: dict[tuple[Any, ...], Descriptor] = {}
        self.by_id: dict[int, Descriptor] = {}

    def of(self, listed: bytes | tuple[Any, ...], key: tuple[str, ...]) -> Descriptor:
        raw = (listed, key)
        found = self._interned.get(raw)
        if found is not None:
            return found
        columns = tuple(
            ColumnDesc(c[0], c[2], c[3], c[4]) for c in (_columns(listed) if isinstance(listed, bytes) else listed)
        )
        found = self._known.setdefault((columns, key), Descriptor(len(self.by_id) + 1, columns, key))
        self._interned[raw] = found
        self.by_id[found.desc_id] = found
        return found


def events(tables: Sequence[str], bodies: Sequence[bytes], *, native: bool = True) -> Events:
    """The events of changelog rows (``source_table``, ``event_avro``), in the given (changelog) order
    (``native`` False: every body read by fastavro, for tests)."""
    at = _field_index()
    ops = _ops()
    i_op, i_key, i_ts, i_pk, i_cols = at["op"], at["order_key"], at["ts_ms"], at["primary_key"], at["columns"]
    i_before, i_after, i_ddl, i_origin = at["before"], at["after"], at["ddl"], at["origin"]
    out = Events({}, [], {})
    interned = Descriptors()
    first: dict[tuple[str, int], str] = {}
    for table, event in zip(tables, decode_bodies(bodies, native=native), strict=True):
        op = ops[event[i_op]]
        topic, partition, offset, row = event[i_origin]
        origin = SEPARATOR.join((topic, f"{partition:010d}", f"{offset:020d}", f"{row:010d}"))
        seq = f"{event[i_key]}{SEPARATOR}{origin}"
        if op not in ROW_OPS:
            ddl = event[i_ddl]
            sql, kind = (None, None) if ddl is None else ddl
            out.control.append(ControlRow(table, op, seq, event[i_ts], kind, sql))
            continue
        listed = event[i_cols]
        descriptor = interned.of(listed if isinstance(listed, bytes) else tuple(listed), tuple(event[i_pk]))
        pair = (table, descriptor.desc_id)
        held = first.get(pair)
        if held is None or seq < held:
            first[pair] = seq
        out.rows.setdefault(table, []).append(
            RowEvent(table, op, seq, origin, event[i_ts], descriptor, event[i_before], event[i_after])
        )
    for (table, desc_id), _ in sorted(first.items(), key=lambda item: (item[1], item[0][1])):
        out.descriptors.setdefault(table, []).append(interned.by_id[desc_id])
    out.control.sort(key=lambda c: c.seq)
    return out
