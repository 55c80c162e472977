"""Untyped row images, read without losing digits inside nested JSON values.

Maxwell sends no column types, so every value is inferred from its JSON type
(``shared.parsing.rows.UNTYPED``). A JSON column arrives as a nested object or
array (a SET as an array of strings), which the core renders back to compact
JSON text. On the fast decode path such a nested value may hold orjson floats
(``{"k": 1.10}`` -> ``1.1``; integers beyond 2**64 -> ``1.2e22``), and the core's
``infer`` renders them as they are, losing digits. So before converting, any
float nested in an object or array asks for the exact decode, as a float at the
top level already does.
"""

from __future__ import annotations

from typing import Any

from shared.event.values import Image
from shared.parsing.errors import BAD_FIELD, RejectError
from shared.parsing.jsondoc import InexactNumber
from shared.parsing.rows import UNTYPED


def require_exact_nested(raw: dict[str, Any]) -> None:
    """Raise InexactNumber when a fast-decoded float sits inside a nested value."""
    stack: list[Any] = [v for v in raw.values() if isinstance(v, dict | list)]
    while stack:
        value = stack.pop()
        items = value.values() if isinstance(value, dict) else value
        for item in items:
            if isinstance(item, float):
                raise InexactNumber("nested float")
            if isinstance(item, dict | list):
                stack.append(item)


def untyped_image(raw: Any, what: str) -> Image:
    """A typed image of an untyped JSON object of column values (all inferred)."""
    if not isinstance(raw, dict):
        raise RejectError(BAD_FIELD, f"{what} must be a JSON object of column values")
    require_exact_nested(raw)
    return UNTYPED.convert(raw, what)
