"""Untyped row images: Maxwell and GoldenGate send no column types.

Every value is inferred from its JSON type (``shared.parsing.rows.UNTYPED``). A
JSON column arrives as a nested object or array (a Maxwell SET as an array of
strings), which the kernel's ``infer`` conversion renders back to compact JSON
text with every number's own digits: a fast-decoded float inside it asks for
the exact decode, and integers beyond 64 bits are written as their digits.
"""

from __future__ import annotations

from typing import Any

from binlake.shared.event.values import Image
from binlake.shared.parsing.errors import BAD_FIELD, RejectError
from binlake.shared.parsing.rows import UNTYPED


def untyped_image(raw: Any, what: str) -> Image:
    """A typed image of an untyped JSON object of column values (all inferred)."""
    if not isinstance(raw, dict):
        raise RejectError(BAD_FIELD, f"{what} must be a JSON object of column values")
    return UNTYPED.convert(raw, what)
