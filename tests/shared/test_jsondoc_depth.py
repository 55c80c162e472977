"""A document nested deeper than ``jsondoc.MAX_DEPTH`` is malformed on both decoders, on every Python.

The standard library's own limit hangs on the Python version (3.11 stops near
1,000 levels, 3.13 reads 5,000) and on the caller's stack; orjson stops at 1,024.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from binlake.shared.parsing.errors import MALFORMED, RejectError
from binlake.shared.parsing.jsondoc import MAX_DEPTH, decode_exact, decode_fast

pytestmark = pytest.mark.unit

Decoder = Callable[[bytes], Any]
DECODERS: list[Decoder] = [decode_fast, decode_exact]


def _nested(depth: int) -> bytes:
    return b'{"data": ' + b"[" * (depth - 1) + b"1" + b"]" * (depth - 1) + b"}"


@pytest.mark.parametrize("decode", DECODERS)
def test_the_deepest_allowed_document_decodes(decode: Decoder) -> None:
    doc = decode(_nested(MAX_DEPTH))
    for _ in range(MAX_DEPTH):  # the object, then its arrays
        doc = doc["data"] if isinstance(doc, dict) else doc[0]
    assert doc == 1


@pytest.mark.parametrize("decode", DECODERS)
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1_100, 5_000, 100_000])
def test_a_deeper_document_is_malformed(decode: Decoder, depth: int) -> None:
    with pytest.raises(RejectError) as rejected:
        decode(_nested(depth))
    assert rejected.value.code == MALFORMED
    assert f"nests deeper than {MAX_DEPTH} levels" in str(rejected.value)


@pytest.mark.parametrize("decode", DECODERS)
def test_brackets_inside_strings_are_text(decode: Decoder) -> None:
    text = "[" * 2 * MAX_DEPTH + '\\"{'
    raw = b'{"a": "' + text.encode() + b'", "b": [' + b"[]," * MAX_DEPTH + b"[]]}"
    doc = decode(raw)
    assert doc["a"] == text.replace('\\"', '"')
    assert len(doc["b"]) == MAX_DEPTH + 1
