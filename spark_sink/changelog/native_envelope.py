"""Envelopes read by the native fast lane (``shared/fastlane/src/avro_shape.rs``), fastavro's values exactly.

``arrow_rows.decode_envelope`` reads an event's envelope with fastavro and an envelope-only reader schema:
about 60 µs an event, most of the changelog writer's time, since fastavro still resolves every writer field
(the images too) in Python-level code. ``Envelopes`` compiles a writer schema into an ``AvroShape`` whose
image fields are read past unbuilt, reads a batch of bodies in one native call, and names what the native
side leaves unnamed (records come back as tuples, enums as indexes) into fastavro's dicts and symbols. A body
the native side declines (anything fastavro reads its own way, see the Rust module) comes back None, and
the caller reads it with fastavro: either way the envelope is fastavro's.

Without the native extension (no Rust toolchain where the sink was installed), ``for_schema`` returns None
and every body goes through fastavro.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

Namer = Callable[[Any], Any]
_LETTERS: Final = {
    "null": "N",
    "boolean": "Z",
    "int": "I",
    "long": "L",
    "float": "F",
    "double": "D",
    "string": "S",
    "bytes": "B",
}


class UnsupportedSchema(ValueError):
    """A schema construct the notation has no letter for (fixed, a recursive reference): use fastavro."""


def tagged(union: list[Any]) -> bool:
    """Whether ``notation(..., tag=True)`` reads a union with its branch index: one of more than two branches
    (the canonical schema's image values), where the value's Python type cannot tell ``Date`` from ``Time``."""
    return len(union) > 2


def notation(
    avro_type: Any,
    named: dict[str, Any],
    *,
    skip: frozenset[str] = frozenset(),
    raw: frozenset[str] = frozenset(),
    tag: bool = False,
) -> str:
    """``avro_shape.rs``'s notation of an Avro type (the top record's fields in ``skip`` read past, those in
    ``raw`` returned as their encoded bytes; with ``tag``, the ``tagged`` unions read as ``(branch index,
    value)``).

    ``named`` collects the named types defined so far (a later reference by name reads the same shape).
    """
    if isinstance(avro_type, list):
        head = "|(" if tag and tagged(avro_type) else "("
        return head + ",".join(notation(t, named, tag=tag) for t in avro_type) + ")"
    if isinstance(avro_type, str):
        if avro_type in _LETTERS:
            return _LETTERS[avro_type]
        if avro_type in named:
            if named[avro_type] is None:
                raise UnsupportedSchema(f"recursive type {avro_type}")
            return notation(named[avro_type], named, tag=tag)
        raise UnsupportedSchema(f"unknown type {avro_type}")
    kind = avro_type["type"]
    if isinstance(kind, (dict, list)):
        return notation(kind, named, tag=tag)
    if kind == "record":
        named[avro_type["name"]] = None  # a reference inside itself: recursive
        marks = {**dict.fromkeys(skip, "!"), **dict.fromkeys(raw, "^")}
        fields = [marks.get(f["name"], "") + notation(f["type"], named, tag=tag) for f in avro_type["fields"]]
        named[avro_type["name"]] = avro_type
        return "<" + ",".join(fields) + ">"
    if kind == "enum":
        named[avro_type["name"]] = avro_type
        return f"E{len(avro_type['symbols'])};"
    if kind == "array":
        return "[" + notation(avro_type["items"], named, tag=tag)
    if kind == "map":
        return "{" + notation(avro_type["values"], named, tag=tag)
    if kind in _LETTERS:
        return notation(kind, named, tag=tag)  # a primitive with a logical type: its plain value
    raise UnsupportedSchema(f"no notation for {kind}")


def namer(avro_type: Any, named: dict[str, Any]) -> Namer | None:
    """What turns the native value of ``avro_type`` into fastavro's (records to dicts, enum indexes to symbols);
    None where the two are the same."""
    if isinstance(avro_type, list):
        branches = [namer(t, named) for t in avro_type]
        if all(b is None for b in branches):
            return None
        return _union(avro_type, branches)
    if isinstance(avro_type, str):
        return namer(named[avro_type], named) if avro_type in named else None
    if "logicalType" in avro_type:
        raise UnsupportedSchema(f"fastavro converts logical type {avro_type['logicalType']}: use it")
    kind = avro_type["type"]
    if isinstance(kind, (dict, list)):
        return namer(kind, named)
    if kind == "record":
        named[avro_type["name"]] = avro_type
        fields = [(f["name"], namer(f["type"], named)) for f in avro_type["fields"]]
        return _record(fields)
    if kind == "enum":
        named[avro_type["name"]] = avro_type
        symbols = list(avro_type["symbols"])
        return lambda index: None if index is None else symbols[index]
    if kind == "array":
        item = namer(avro_type["items"], named)
        return None if item is None else (lambda items: None if items is None else [item(v) for v in items])
    if kind == "map":
        value = namer(avro_type["values"], named)
        return None if value is None else (lambda m: None if m is None else {k: value(v) for k, v in m.items()})
    return None


def register(avro_type: Any, named: dict[str, Any]) -> None:
    """Record the named types ``avro_type`` defines in ``named`` (a field read past still defines them)."""
    if isinstance(avro_type, list):
        for t in avro_type:
            register(t, named)
    elif isinstance(avro_type, dict):
        kind = avro_type["type"]
        if isinstance(kind, (dict, list)):
            register(kind, named)
        elif kind in ("record", "enum", "fixed"):
            named[avro_type["name"]] = avro_type
            for f in avro_type.get("fields", []):
                register(f["type"], named)
        elif kind == "array":
            register(avro_type["items"], named)
        elif kind == "map":
            register(avro_type["values"], named)


def _record(fields: list[tuple[str, Namer | None]]) -> Namer:
    names = [name for name, _ in fields]
    if all(f is None for _, f in fields):
        return lambda t: None if t is None else dict(zip(names, t, strict=True))

    def name_record(t: Any) -> Any:
        if t is None:
            return None
        return {name: (v if f is None else f(v)) for (name, f), v in zip(fields, t, strict=True)}

    return name_record


def _union(avro_types: list[Any], branches: list[Namer | None]) -> Namer:
    # The native side returns the branch's value without its index: a union whose branches need naming must
    # tell them apart by the value's Python type (the canonical schema's unions are null plus one type).
    kinds = [t for t, b in zip(avro_types, branches, strict=True) if b is not None]
    others = [t for t, b in zip(avro_types, branches, strict=True) if b is None and t != "null"]
    if len(kinds) != 1 or others:
        raise UnsupportedSchema(f"a union the native reader cannot name: {avro_types}")
    only = next(b for b in branches if b is not None)
    return lambda v: None if v is None else only(v)


class Envelopes:
    """A writer schema's envelopes (its fields outside ``skip``) read natively, named as fastavro names them."""

    def __init__(self, schema: dict[str, Any], skip: frozenset[str]) -> None:
        from binlake.shared.fastlane._native import AvroShape

        self._shape = AvroShape(notation(schema, {}, skip=skip))
        named: dict[str, Any] = {}
        self._fields: list[tuple[str, Namer | None]] = []
        for field in schema["fields"]:
            if field["name"] in skip:
                register(field["type"], named)  # a later field may refer to the named types it defines
            else:
                self._fields.append((field["name"], namer(field["type"], named)))
        self._kept = [f["name"] not in skip for f in schema["fields"]]

    def read(self, bodies: Sequence[bytes], offset: int) -> list[dict[str, Any] | None]:
        """Each body's envelope from byte ``offset`` on; None where fastavro must read it."""
        out: list[dict[str, Any] | None] = []
        fields = self._fields
        kept = self._kept
        for values in self._shape.read_many(list(bodies), offset):
            if values is None:
                out.append(None)
                continue
            record: dict[str, Any] = {}
            for (name, name_of), value in zip(fields, (v for v, k in zip(values, kept, strict=True) if k), strict=True):
                record[name] = value if name_of is None else name_of(value)
            out.append(record)
        return out


def for_schema(schema: dict[str, Any], skip: frozenset[str]) -> Envelopes | None:
    """``Envelopes`` of ``schema``, or None without the native extension or for a schema it cannot read."""
    try:
        return Envelopes(schema, skip)
    except (ImportError, ValueError):  # UnsupportedSchema, or a notation the native side refuses (an empty record)
        return None
