"""The JSON view of a canonical event: what ``binlake normalize`` prints.

One JSON object per event, fields as in docs/canonical-event.md, compact (no
spaces). Values: integers that fit int64 as JSON integers, larger ones as
decimal strings; decimals as strings (the vendor's digits); floats as numbers
spelled as orjson spells them (``1.0``, ``1e+16``, ``1.5e-7``; NaN and the
infinities as ``null``); bytes as base64; dates ``YYYY-MM-DD``; times
``[-]HH:MM:SS[.ffffff]``; local date-times ``YYYY-MM-DDTHH:MM:SS[.ffffff]``;
instants the same in UTC with a trailing ``Z``; a value the column type cannot
hold (MySQL zero date) as ``{"unparsed": text}``.

The kernel renders it (``shared/kernel/src/json_view.rs``), from the event's
Avro record: ``avro.encoder().json`` writes the event's body and renders it, so
the view, the record and the record key (whose key values are in the view) are
one reading of the event. ``binlake normalize`` renders its record values with
the same code (``_kernel.render_json``).
"""

from __future__ import annotations

from typing import Any

import orjson

from binlake.shared.codec import avro
from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import Value


def render(event: ChangeEvent) -> bytes:
    """The event as one line of JSON (no trailing newline).

    Raises what the encoder raises for an image value that is no canonical value (TypeError, ...)."""
    return avro.encoder().json(event)


def render_value(value: Value) -> Any:
    """One value as it appears in the JSON view, decoded (``"1.50"`` for ``Decimal("1.50")``; for tests
    and tools)."""
    return orjson.loads(avro.encoder().json_value(value))
