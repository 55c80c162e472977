"""Skipping the repeated ``schema`` half of enveloped Debezium JSON messages.

With Kafka Connect's JsonConverter and ``schemas.enable=true`` every message
is ``{"schema":S,"payload":P}``, and the schema S is the same bytes for every
change of a table: three quarters of a typical message, and most of the cost
of decoding it. So the parser remembers the bytes of each schema it has
decoded (``remember``) and, for a message laid out exactly as
``{"schema":`` + a remembered S + ``,"payload":`` + P + ``}``, decodes P alone
and reuses the decoded schema (``split``).

Why this reads every message exactly as the full decode would:

- S is remembered only when those bytes, decoded on their own, are one
  complete JSON object equal to the schema the full decode of that message
  found. A JSON object is self-delimiting, so in any message that has S right
  after ``{"schema":``, the schema's value is S and nothing else.
- The caller decodes P on its own and must get one complete JSON value; any
  other layout (whitespace, other keys, a repeated key, key order) fails that
  or never matches, and takes the full decode.
- Schemas holding fractional numbers (and bytes that do not decode alone)
  are remembered as unfit, so that checking them again costs a byte
  comparison, and always take the full decode: the fast and the exact decoder
  read fractions differently, and a reused schema must be what either decoder
  would have produced.

The remembered schema objects are shared by every message that matches, so
parsers must treat them as read-only (they do: schemas are only read).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import orjson

from binlake.shared.parsing.jsondoc import check_depth
from binlake.shared.parsing.rows import RowTypes

_HEAD: Final = b'{"schema":'
_SEPARATOR: Final = b',"payload":'
_LIMIT: Final = 256
"""Distinct schemas remembered (one per table and schema version); all forgotten when full."""
_RECENT: Final = 8
"""Schemas checked by a plain byte comparison before the hashed lookup."""


@dataclass(slots=True, eq=False)
class KnownSchema:
    """A remembered envelope schema: its bytes, its decoded object and what the parser derived from it."""

    text: bytes
    doc: dict[str, Any] | None
    """None for schema bytes seen and found unfit (see above): those always take the full decode."""
    row_types: dict[str, RowTypes] = field(default_factory=dict)
    """The row types by bytes encoding, when the schema declares the row struct."""


_known: dict[bytes, KnownSchema] = {}
_recent: list[KnownSchema] = []


def split(raw: bytes) -> tuple[KnownSchema, bytes] | None:
    """The remembered schema and the payload bytes of ``raw``, or None (then decode it all, and ``remember``).

    A schema remembered as unfit comes back too (``doc`` None): decode it all, nothing to remember.
    """
    if not raw.endswith(b"}"):
        return None
    known, end = _match(raw)
    if known is None:
        return None
    return known, raw[end + len(_SEPARATOR) : -1]


def payload_alone(found: tuple[KnownSchema, bytes] | None) -> tuple[KnownSchema, bytes, Any] | None:
    """``split``'s answer with its payload decoded alone (orjson), where the schema is remembered fit: the
    schema, the payload's bytes and the payload. None otherwise, or when the payload is not one JSON value on
    its own: then the full decode decides."""
    if found is None or found[0].doc is None:
        return None
    known, payload_raw = found
    try:
        return known, payload_raw, orjson.loads(payload_raw)
    except orjson.JSONDecodeError:
        return None


def fast_document(raw: bytes) -> dict[str, Any] | None:
    """``raw`` as ``decode_fast`` decodes it, when it is an envelope whose schema is remembered fit: the
    remembered schema object beside the payload decoded alone (``payload_alone``), after the whole message's
    depth check, which refuses it as ``decode_fast`` does. None for any other message: decode it all.

    The schema object is shared (read it only); the payload decoded alone is what the full decode holds,
    see above."""
    alone = payload_alone(split(raw))
    if alone is None:
        return None
    check_depth(raw)
    known, _, payload = alone
    return {"schema": known.doc, "payload": payload}


def remember(raw: bytes, schema: dict[str, Any]) -> None:
    """After a full decode of ``raw`` found ``schema``: remember its bytes, fit or not (see above)."""
    known, end = _match(raw)
    if known is not None or end < 0:
        return
    text = raw[len(_HEAD) : end]
    try:
        decoded = orjson.loads(text)
    except orjson.JSONDecodeError:
        decoded = None  # the separator sits inside the schema (in a string): not this shortcut
    fit = isinstance(decoded, dict) and not has_fraction(decoded) and decoded == schema
    if len(_known) >= _LIMIT:
        _known.clear()
        _recent.clear()
    _known[text] = KnownSchema(text, decoded if fit else None)


def _match(raw: bytes) -> tuple[KnownSchema | None, int]:
    """The remembered schema ``raw`` starts with (or None), and where its schema bytes end (-1: no envelope)."""
    if not raw.startswith(_HEAD):
        return None, -1
    start = len(_HEAD)
    for known in _recent:
        end = start + len(known.text)
        # Comparing a few KB of bytes costs far less than hashing them.
        if raw.startswith(known.text, start) and raw.startswith(_SEPARATOR, end):
            return known, end
    end = raw.find(_SEPARATOR, start)
    if end < 0:
        return None, -1
    hit = _known.get(raw[start:end])
    if hit is not None:
        if len(_recent) >= _RECENT:
            _recent.pop()
        _recent.insert(0, hit)
    return hit, end


def has_fraction(value: Any) -> bool:
    stack = [value]
    while stack:
        current = stack.pop()
        for item in current.values() if isinstance(current, dict) else current:
            if isinstance(item, float):
                return True
            if isinstance(item, dict | list):
                stack.append(item)
    return False
