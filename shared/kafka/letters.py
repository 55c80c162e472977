"""A dead letter as it is produced: the original bytes where they fit, capped headers.

A dead letter keeps the input message's key and value, untouched, with the
``binlake.*`` headers of ``shared/kafka/records.py`` saying where it came from and
why it was rejected. Two limits make it fit the dead-letter topic:

- The value is cut to ``BINLAKE_DLQ_MAX_VALUE_BYTES`` (default 1,000,000, below the
  broker's default ``message.max.bytes`` of 1,048,588 with room for key and headers).
  A cut letter says so: ``binlake.value.truncated = true``, and
  ``binlake.value.length`` / ``binlake.value.sha256`` describe the original value, so
  it can be found again in the source topic (whose retention keeps it for a while).
- A letter the broker refuses all the same (a dead-letter topic with a smaller
  ``max.message.bytes``) goes again *bare*: no key, no value, and the length and
  SHA-256 of both in headers (``binlake.key.length`` / ``binlake.key.sha256`` too).

Every header value is at most ``MAX_HEADER_BYTES`` (cut on a UTF-8 character boundary,
ending in ``…``). A cut letter cannot be replayed as it is: its headers say why.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Final

H_VALUE_TRUNCATED: Final = "binlake.value.truncated"
H_VALUE_LENGTH: Final = "binlake.value.length"
H_VALUE_SHA256: Final = "binlake.value.sha256"
H_KEY_LENGTH: Final = "binlake.key.length"
H_KEY_SHA256: Final = "binlake.key.sha256"

MAX_HEADER_BYTES: Final = 1024
"""The longest header value a dead letter carries (reasons are the long ones)."""

_ELLIPSIS: Final = "…".encode()


@dataclass(slots=True, frozen=True)
class Letter:
    key: bytes | None
    value: bytes
    headers: list[tuple[str, bytes]]


def cap_header(value: bytes) -> bytes:
    """``value`` cut to ``MAX_HEADER_BYTES``, on a UTF-8 character boundary, ending in ``…``."""
    if len(value) <= MAX_HEADER_BYTES:
        return value
    # Header values are encoded text: "ignore" drops only a character the cut split in two.
    cut = value[: MAX_HEADER_BYTES - len(_ELLIPSIS)].decode("utf-8", "ignore").encode()
    return cut + _ELLIPSIS


def dead_letter(
    key: bytes | None, value: bytes, headers: list[tuple[str, bytes]], *, max_value_bytes: int, bare: bool = False
) -> Letter:
    """The letter for an input message's ``key`` and ``value`` with its origin/reason ``headers``."""
    capped = [(name, cap_header(header)) for name, header in headers]
    if bare:
        capped += _describe(H_VALUE_LENGTH, H_VALUE_SHA256, value)
        capped.append((H_VALUE_TRUNCATED, b"true"))
        if key is not None:
            capped += _describe(H_KEY_LENGTH, H_KEY_SHA256, key)
        return Letter(None, b"", capped)
    if len(value) > max_value_bytes:
        capped += _describe(H_VALUE_LENGTH, H_VALUE_SHA256, value)
        capped.append((H_VALUE_TRUNCATED, b"true"))
        return Letter(key, value[:max_value_bytes], capped)
    return Letter(key, value, capped)


def _describe(length_header: str, digest_header: str, data: bytes) -> list[tuple[str, bytes]]:
    return [(length_header, str(len(data)).encode()), (digest_header, hashlib.sha256(data).hexdigest().encode())]
