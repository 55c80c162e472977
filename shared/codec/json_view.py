"""The JSON view of a canonical event: what ``binlake normalize`` prints.

One JSON object per event, fields as in docs/canonical-event.md. Values:
integers that fit int64 as JSON integers, larger ones as decimal strings;
decimals as strings (the vendor's digits); floats as numbers; bytes as base64;
dates ``YYYY-MM-DD``; times ``[-]HH:MM:SS[.ffffff]``; local date-times
``YYYY-MM-DDTHH:MM:SS[.ffffff]``; instants the same with a trailing ``Z``; a
value the column type cannot hold (MySQL zero date) as ``{"unparsed": text}``.
"""

from __future__ import annotations

import base64
from decimal import Decimal
from typing import Any, Final

import orjson

from binlake.shared.event.model import ChangeEvent, Columns
from binlake.shared.event.values import BigInt, SqlTime, Unparsed, decimal_text

_OPTIONS: Final = orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_UTC_Z


def _default(value: Any) -> Any:
    kind = type(value)
    if kind is Columns:
        # Shared by every event of a table shape: render once, splice the bytes.
        if value.rendered is None:
            value.rendered = orjson.dumps(list(value))
        return orjson.Fragment(value.rendered)
    if kind is Decimal:
        return decimal_text(value)
    if kind is BigInt:
        return int.__repr__(value)
    if kind is bytes:
        return base64.b64encode(value).decode("ascii")
    if kind is SqlTime:
        return value.isoformat()
    if kind is Unparsed:
        return {"unparsed": value.text}
    raise TypeError(f"not a canonical value: {kind.__name__}")


def render(event: ChangeEvent) -> bytes:
    """The event as one line of JSON (no trailing newline)."""
    return orjson.dumps(event, default=_default, option=_OPTIONS)


def render_value(value: Any) -> Any:
    """One value as it appears in the JSON view (for tests and tools)."""
    return orjson.loads(orjson.dumps(value, default=_default, option=_OPTIONS))
