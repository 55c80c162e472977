"""The ``drs-avro`` lane's Python side: which user schemas it reads (its column planner is DRS JSON's).

The lane reads the DRS *flat* record (``services/drs_avro/parser.py`` hands it
to the drs-json reader) and only under a schema it can decode exactly: one
record whose fields all have the flat shape's own names (so the Python parser
reads every message as the flat shape, never the DTS-like one), each of a type
built from null, boolean, int, long, double, string, bytes, arrays, maps and
unions (no logical types, no named types, no other options). ``fields`` turns
such a schema into the notation ``src/avro_reader.rs`` compiles; any other
schema gets no lane.
"""

from __future__ import annotations

from typing import Any, Final

from binlake.services.drs_avro.parser import writer_schema
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import RejectError

_PRIMITIVES: Final = {"null": "N", "boolean": "Z", "int": "I", "long": "L", "double": "D", "string": "S", "bytes": "B"}
_NAMES: Final = frozenset(
    {"id", "es", "ts", "database", "table", "type", "isDdl", "sql", "mysqlType", "sqlType", "pkNames", "data", "old"}
)
"""Fields the lane knows: their meaning in the flat reader is what ``src/drs.rs`` reproduces."""
_REQUIRED: Final = frozenset({"id", "type", "table", "data", "mysqlType"})
_OPTIONS: Final = frozenset({"avro_schema", "avro_record"})


def fields(ctx: ParseContext) -> list[tuple[str, str]] | None:
    """(field name, type notation) of the configured record, or None: no lane for this schema."""
    if not _OPTIONS.issuperset(ctx.options):
        return None
    try:
        schema = writer_schema(ctx)  # the very record the Python parser decodes with
    except RejectError:
        return None
    if not isinstance(schema, dict) or schema.get("type") != "record" or not isinstance(schema.get("fields"), list):
        return None
    out: list[tuple[str, str]] = []
    for field in schema["fields"]:
        name = field.get("name") if isinstance(field, dict) else None
        if name not in _NAMES:
            return None
        assert isinstance(name, str)
        written = notation(field.get("type"))
        if written is None:
            return None
        out.append((name, written))
    names = [name for name, _ in out]
    if len(set(names)) != len(names) or not _REQUIRED.issubset(names):
        return None
    return out


def notation(t: Any) -> str | None:
    """A field type in ``avro_reader::Ty``'s notation, or None: not decoded by the lane."""
    if isinstance(t, str):
        return _PRIMITIVES.get(t)
    if isinstance(t, list):
        parts = [notation(branch) for branch in t]
        if not parts or any(part is None for part in parts):
            return None
        return "(" + ",".join(part for part in parts if part is not None) + ")"
    if not isinstance(t, dict) or "logicalType" in t:
        return None  # logical types decode to other Python values (Decimal, datetime...)
    kind_ = t.get("type")
    if kind_ == "array":
        inner = notation(t.get("items"))
        return None if inner is None else "[" + inner
    if kind_ == "map":
        inner = notation(t.get("values"))
        return None if inner is None else "{" + inner
    return _PRIMITIVES.get(kind_) if isinstance(kind_, str) else None
