"""Untyped row images, read without losing digits inside nested JSON values.

Maxwell and GoldenGate send no column types, so every value is inferred from
its JSON type (``shared.parsing.rows.UNTYPED``). A JSON column arrives as a
nested object or array (a Maxwell SET as an array of strings), which the core's
``infer`` renders back to compact JSON text with orjson. Two core gaps are
covered here, before the core sees the image:

- on the fast decode path a nested value may hold orjson floats (``{"k": 1.10}``
  is ``1.1``; integers beyond 2**64 are ``1.2e22``) and ``infer`` renders them
  as they are, losing digits: such a float asks for the exact decode, as a
  float at the top level already does;
- after the exact decode, orjson cannot write integers outside the 64-bit
  range (``infer`` raises "Integer exceeds 64-bit range"): they are handed to
  it as ``orjson.Fragment`` digits instead.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from binlake.shared.event.values import Image
from binlake.shared.parsing.errors import BAD_FIELD, BAD_VALUE, RejectError
from binlake.shared.parsing.jsondoc import InexactNumber
from binlake.shared.parsing.rows import UNTYPED

_INT_MIN: Final = -(2**63)
_UINT_MAX: Final = 2**64 - 1
_MAX_DEPTH: Final = 250
"""orjson writes at most 254 nesting levels; deeper values are rejected anyway."""


def _has_wide_ints(value: dict[str, Any] | list[Any]) -> bool:
    """Whether a nested value holds integers orjson cannot write.

    Raises InexactNumber for a fast-decoded float anywhere inside it.
    """
    wide = False
    stack: list[Any] = [value]
    while stack:
        current = stack.pop()
        for item in current.values() if isinstance(current, dict) else current:
            if isinstance(item, float):
                raise InexactNumber("nested float")
            if isinstance(item, dict | list):
                stack.append(item)
            elif type(item) is int and not _INT_MIN <= item <= _UINT_MAX:
                wide = True
    return wide


def _with_fragments(value: Any, depth: int, what: str) -> Any:
    if depth > _MAX_DEPTH:
        raise RejectError(BAD_VALUE, f"{what}: JSON value nests deeper than {_MAX_DEPTH} levels")
    if isinstance(value, dict):
        return {key: _with_fragments(item, depth + 1, what) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_fragments(item, depth + 1, what) for item in value]
    if type(value) is int and not _INT_MIN <= value <= _UINT_MAX:
        return orjson.Fragment(str(value))
    return value


def untyped_image(raw: Any, what: str) -> Image:
    """A typed image of an untyped JSON object of column values (all inferred)."""
    if not isinstance(raw, dict):
        raise RejectError(BAD_FIELD, f"{what} must be a JSON object of column values")
    fixed: dict[str, Any] | None = None
    for name, value in raw.items():
        if isinstance(value, dict | list) and _has_wide_ints(value):
            if fixed is None:
                fixed = dict(raw)
            fixed[name] = _with_fragments(value, 0, f"{what} column {name!r}")
    return UNTYPED.convert(raw if fixed is None else fixed, what)
