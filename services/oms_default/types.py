"""OMS ``__light_type`` column types (the DefaultExtendColumnType serialization).

Each row image of DefaultExtendColumnType carries ``"__light_type": {col:
{"schemaType": TYPE}}``: type metadata, never a column. The type words are
OMS's own (``INT64`` is the signed 64-bit type, ``BIGINT`` an integer beyond
64 bits, ``BLOB`` base64 bytes, ``TIMESTAMP`` epoch-seconds text), so they are
read with the ``oms`` dialect of ``sql_type``, plus two OMS rules the core
dialect does not know:

- DATETIME is rendered ``YYYY-MM-DD HH:mm:ss[.nnnnnnnnn] [zoneId]``. A DATETIME
  is a wall clock (canonical local date-time), so the zone id OMS appends is
  dropped and the wall clock kept as written. Oracle-mode ``DATE`` (which has a
  time of day) is read the same way.
- "Invalid times are shown as the original string": a date/time-shaped text
  that does not read as its type (``2020-02-30``, ``0000-00-00 00:00:00``) is
  kept verbatim as ``Unparsed``; anything else (``"hello"`` in a DATE column)
  is still a bad value and rejects the message.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
from typing import Any, Final

from binlake.shared.event.values import Unparsed, Value
from binlake.shared.parsing import temporal
from binlake.shared.parsing.errors import BAD_FIELD, RejectError, UnreadableValue, describe
from binlake.shared.parsing.rows import RowTypes
from binlake.shared.parsing.sqltypes import Converter, SqlType, sql_type

LIGHT_TYPE: Final = "__light_type"

_TEMPORAL: Final = frozenset({"date", "time", "datetime", "timestamp"})
_ZONE_SUFFIX: Final = re.compile(r"^(.*\d)\s+([A-Za-z][A-Za-z0-9_+\-/]*)$")
_TIME_SHAPED: Final = re.compile(r"-?\d[\d:\-. T/]*[-:][\d:\-. T/]*")
"""Digits with date/time separators only: what an invalid time OMS passes through looks like."""

_CACHE: dict[tuple[Any, ...], RowTypes] = {}
_CACHE_LIMIT: Final = 4096


def _oms_datetime(value: Any) -> _dt.datetime | Unparsed:
    if not isinstance(value, str):
        raise UnreadableValue(f"expected a date-time YYYY-MM-DD HH:mm:ss[.n] [zoneId], got {describe(value)}")
    text = value.strip()
    # A zone id is the last word, which starts with a letter: most values end in their clock and skip the
    # (backtracking) pattern.
    words = text.rsplit(None, 1)
    m = _ZONE_SUFFIX.match(text) if len(words) == 2 and words[1][:1].isalpha() else None
    if m is not None and not m.group(2).upper().startswith(("AM", "PM")):
        text = m.group(1)  # the wall clock; the zone id OMS appends is not part of a DATETIME
    if len(text) == 10:
        text += " 00:00:00"  # an Oracle DATE at midnight may be printed without its time
    return temporal.parse_local_datetime(text)


def _verbatim_if_invalid(convert: Converter) -> Converter:
    def wrapped(value: Any) -> Value:
        try:
            return convert(value)
        except ValueError:
            if isinstance(value, str) and _TIME_SHAPED.fullmatch(value.strip()):
                return Unparsed(value)
            raise

    return wrapped


@functools.lru_cache(maxsize=1024)
def light_sql_type(text: str, zone: _dt.tzinfo, oracle_mode: bool) -> SqlType:
    """The logical type and converter of one OMS ``schemaType`` word."""
    base = sql_type(text, "oms", "base64", zone)
    logical = base.logical
    convert = base.convert
    if logical == "datetime" or (oracle_mode and logical == "date"):
        logical, convert = "datetime", _oms_datetime
    if logical in _TEMPORAL:
        convert = _verbatim_if_invalid(convert)
    return SqlType(base.text, logical, base.precision, base.scale, convert)


def split_image(raw: Any, what: str) -> tuple[dict[str, Any] | None, dict[str, str]]:
    """An image's column values without ``__light_type``, and the types it declares."""
    if raw is None:
        return None, {}
    if not isinstance(raw, dict):
        raise RejectError(BAD_FIELD, f"field {what!r} must be an object of column values or null")
    if LIGHT_TYPE not in raw:
        return raw, {}
    values = dict(raw)  # a copy without the types, in the image's order
    light = values.pop(LIGHT_TYPE)
    if light is None:
        return values, {}
    if not isinstance(light, dict):
        raise RejectError(BAD_FIELD, f"{what}.{LIGHT_TYPE} must be an object {{column: {{schemaType}}}}")
    types: dict[str, str] = {}
    for name, spec in light.items():
        if not isinstance(spec, dict):
            raise RejectError(BAD_FIELD, f"{what}.{LIGHT_TYPE} entry {name!r} must be an object with 'schemaType'")
        schema_type = spec.get("schemaType")
        if schema_type is None:
            continue  # no type given: the column's type is inferred from its value
        if not isinstance(schema_type, str) or not schema_type.strip():
            raise RejectError(BAD_FIELD, f"{what}.{LIGHT_TYPE} schemaType of {name!r} must be a non-empty string")
        types[name] = schema_type
    return values, types


def row_types(
    declared: dict[str, str], images: tuple[dict[str, Any] | None, ...], zone: _dt.tzinfo, oracle_mode: bool
) -> RowTypes:
    """Types for the columns the images hold; declared names absent from every image are ignored.

    (The published samples declare ``int8``, ``int16``... for an image of
    ``col1``..``col14``: a descriptor for a column no image holds would
    describe nothing, so only matching names are typed and the rest inferred.)
    """
    first = next((image for image in images if image), None)
    names: tuple[str, ...]
    texts: tuple[str, ...]
    if first is not None and list(first) == list(declared):
        # The common case: the first image holds the declared columns, in order.
        names, texts = tuple(declared), tuple(declared.values())
    else:
        order: list[str] = []
        seen: set[str] = set()
        for image in images:
            for name in image or ():
                if name in declared and name not in seen:
                    seen.add(name)
                    order.append(name)
        names, texts = tuple(order), tuple([declared[name] for name in order])
    key = (zone, oracle_mode, names, texts)
    cached = _CACHE.get(key)
    if cached is not None:
        return cached
    types = RowTypes((name, light_sql_type(text, zone, oracle_mode)) for name, text in zip(names, texts, strict=True))
    if len(_CACHE) >= _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[key] = types
    return types
