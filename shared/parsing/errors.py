"""Why a vendor message is rejected.

A parser raises ``RejectError`` for every message it cannot turn into canonical
events. The runtime catches it at the parser boundary and routes the raw bytes
to the dead-letter output with ``code`` (a stable, machine-readable class used
as a metric label) and ``reason`` (a precise human sentence).

Reasons travel in dead-letter headers, logs and ``binlake normalize``'s output,
where row values (personal data) must not go: a reason names fields, columns
and their declared types, says what was expected and describes the offending
value by its kind and size (``describe``), never quoting the value or a
fragment of it. Converters raise ``UnreadableValue``, whose message is worded
that way; any other exception a conversion lets through (the standard
library's ``int()`` quotes its input) is reported by ``value_problem`` without
its message.
"""

from __future__ import annotations

import re
from typing import Any, Final

from binlake.shared.errors import BinlakeError
from binlake.shared.kernel._kernel import describe as _describe

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
"""Reasons travel in Kafka headers and logs: long ones (many column names) are cut to fit."""


class RejectError(BinlakeError):
    """The message cannot be normalized; it goes to the dead-letter output."""

    retriable = False

    def __init__(self, code: str, reason: str) -> None:
        if len(reason) > MAX_REASON:
            reason = reason[: MAX_REASON - 1] + "…"
        super().__init__(f"{code}: {reason}")
        self.code = code
        self.reason = reason


class UnreadableValue(ValueError):
    """A value its type cannot read; the message describes the value and never quotes it."""


def describe(value: Any) -> str:
    """A value's kind and size, never its content: "a string of 6 characters" (the kernel's wording, which
    its conversions' reasons use too)."""
    return _describe(value)


def value_problem(exc: BaseException, value: Any) -> str:
    """What a reason says about ``value``, which a converter refused with ``exc``.

    Only an ``UnreadableValue``'s message is worded without the value; any other
    exception is named by its type alone.
    """
    if isinstance(exc, UnreadableValue):
        return str(exc)
    return f"cannot be read as its type ({type(exc).__name__}), got {describe(value)}"


_EOF_TEXT: Final = re.compile(r"Expected -?\d+ bytes, read \d+")
"""fastavro's truncation message: sizes only."""


def decoder_problem(exc: BaseException) -> str:
    """A decoder's exception named without its message, which may quote the bytes it read."""
    if isinstance(exc, UnicodeDecodeError):
        return f"invalid {exc.encoding} text at byte {exc.start} ({exc.reason})"
    if isinstance(exc, EOFError) and _EOF_TEXT.fullmatch(str(exc)):
        return f"EOFError: {exc}"
    return type(exc).__name__


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def _digits(number: int) -> int:
    bits = abs(number).bit_length()
    if bits > 13_000:  # str() refuses beyond 4,300 digits: the count from the bit length, exact enough
        return int(bits * 0.30103) + 1
    return len(str(abs(number)))
