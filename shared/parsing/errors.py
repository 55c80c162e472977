"""Why a vendor message is rejected.

A parser raises ``RejectError`` for every message it cannot turn into canonical
events. The runtime catches it at the parser boundary and routes the raw bytes
to the dead-letter output with ``code`` (a stable, machine-readable class used
as a metric label) and ``reason`` (a precise human sentence).
"""

from __future__ import annotations

from typing import Final

from shared.errors import BinlakeError

# Stable reject codes. Dashboards and DLQ filters use them: never rename one.
MALFORMED: Final = "malformed"
"""Not decodable at all: invalid UTF-8, invalid JSON, truncated Avro."""
WRONG_FORMAT: Final = "wrong_format"
"""Decodable, but the message is of another vendor format."""
MISSING_FIELD: Final = "missing_field"
"""A field the format requires is absent or null."""
BAD_FIELD: Final = "bad_field"
"""A field has the wrong JSON type or an unusable value."""
BAD_VALUE: Final = "bad_value"
"""A column value cannot be read as its declared type."""
INCONSISTENT: Final = "inconsistent"
"""Fields contradict each other (e.g. a primary key column missing from the image)."""
UNSUPPORTED: Final = "unsupported"
"""A well-formed message of a kind binlake does not handle."""
CONFIG: Final = "config"
"""The message needs configuration that is missing (e.g. a topic-to-table mapping)."""
INTERNAL: Final = "internal"
"""A parser bug: an unexpected exception. Still dead-lettered, never crashes."""

REJECT_CODES: Final = frozenset(
    {MALFORMED, WRONG_FORMAT, MISSING_FIELD, BAD_FIELD, BAD_VALUE, INCONSISTENT, UNSUPPORTED, CONFIG, INTERNAL}
)


MAX_REASON: Final = 1000
"""Reasons travel in Kafka headers and logs: values quoted in them are cut to fit."""


class RejectError(BinlakeError):
    """The message cannot be normalized; it goes to the dead-letter output."""

    retriable = False

    def __init__(self, code: str, reason: str) -> None:
        if len(reason) > MAX_REASON:
            reason = reason[: MAX_REASON - 1] + "…"
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason
