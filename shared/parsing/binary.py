"""The text encodings vendors give binary column values in.

- ``latin1``: Alibaba Canal renders BLOB/BINARY bytes as an ISO-8859-1 string,
  one character per byte.
- ``base64``: OceanBase OMS (Default, DataWorks, SharePlex), Maxwell, Debezium's
  default ``binary.handling.mode``.
- ``hex``: OMS Debezium serializations (base16).
- ``list``: Huawei DRS JSON renders bytes as a text list ``[106, 103, ...]``.

The readings are the native kernel's ``bytes`` conversion
(``shared/kernel/src/conversion.rs``): ``DECODERS[encoding](text)`` is the bytes,
or an ``UnreadableValue`` saying where the text goes wrong (a position, a
length), never quoting it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal, cast

from binlake.shared.kernel._kernel import Conversion

BytesEncoding = Literal["latin1", "base64", "hex", "list"]
BYTES_ENCODINGS: Final = ("latin1", "base64", "hex", "list")

DECODERS: Final[dict[str, Callable[[str], bytes]]] = {
    name: cast("Callable[[str], bytes]", Conversion("bytes", name)) for name in BYTES_ENCODINGS
}
"""Encoding -> its reading of a text (the ``bytes`` conversion: its values are bytes)."""
