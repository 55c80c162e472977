"""Reading binary column values in the encodings vendors use.

- ``latin1``: Alibaba Canal renders BLOB/BINARY bytes as an ISO-8859-1 string,
  one character per byte.
- ``base64``: OceanBase OMS (Default, DataWorks, SharePlex), Maxwell, Debezium's
  default ``binary.handling.mode``.
- ``hex``: OMS Debezium serializations (base16).
- ``list``: Huawei DRS JSON renders bytes as a text list ``[106, 103, ...]``.

Errors are ``UnreadableValue``s saying where the text goes wrong (a position,
a length), never quoting it: reasons carry no row values.
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Any, Final, Literal

from binlake.shared.parsing.errors import UnreadableValue, describe

BytesEncoding = Literal["latin1", "base64", "hex", "list"]
BYTES_ENCODINGS: Final = ("latin1", "base64", "hex", "list")


def from_latin1(text: str) -> bytes:
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError as exc:
        raise UnreadableValue(
            f"expected one character per byte (ISO-8859-1), found a character above U+00FF at position {exc.start}"
            f" of {describe(text)}"
        ) from None


def from_base64(text: str) -> bytes:
    """Strict base64: ``base64.b64decode(text, validate=True)`` without its Python wrapper (this runs per value)."""
    try:
        data = text.encode("ascii")
    except UnicodeEncodeError as exc:
        raise UnreadableValue(
            f"invalid base64: a non-ASCII character at position {exc.start} of {describe(text)}"
        ) from None
    try:
        return binascii.a2b_base64(data, strict_mode=True)
    except binascii.Error as exc:  # binascii's messages name the rule broken, never the data
        raise UnreadableValue(f"invalid base64: {exc} (in {describe(text)})") from None


def from_hex(text: str) -> bytes:
    try:
        return bytes.fromhex(text)
    except ValueError:
        raise UnreadableValue(f"invalid hex (base16) text: {describe(text)}") from None


def from_list_text(text: str) -> bytes:
    """``[106, 103]`` (as text) to bytes; ``[]`` is empty. Signed Java bytes are accepted."""
    body = text.strip()
    if not (body.startswith("[") and body.endswith("]")):
        raise UnreadableValue(f"expected a byte list such as [106, 103], got {describe(text)}")
    inner = body[1:-1].strip()
    if not inner:
        return b""
    parts = inner.split(",")
    try:
        # The common case, in C: every item an unsigned byte (int() ignores the blanks).
        return bytes(map(int, parts))
    except ValueError:
        return from_int_list([part.strip() for part in parts])  # signed bytes, and the worded errors


def from_int_list(items: list[Any]) -> bytes:
    out = bytearray()
    for index, item in enumerate(items):
        try:
            number = int(item)
        except (TypeError, ValueError):
            raise UnreadableValue(f"byte list item {index} is not an integer: {describe(item)}") from None
        if isinstance(item, bool) or not -128 <= number <= 255:
            raise UnreadableValue(f"byte list item {index} is outside -128..255: {describe(item)}")
        out.append(number & 0xFF)
    return bytes(out)


DECODERS: Final[dict[str, Callable[[str], bytes]]] = {
    "latin1": from_latin1,
    "base64": from_base64,
    "hex": from_hex,
    "list": from_list_text,
}
