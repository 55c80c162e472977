"""``hand_over``: auto's detection document goes on to the detected parser, once, for that message only."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from binlake.shared.parsing.jsondoc import decode_and_parse, decode_fast, exact_number, hand_over

pytestmark = pytest.mark.unit


def _seen(doc: Any) -> Any:
    return doc


def test_the_handed_document_is_parsed_once_for_that_very_message() -> None:
    raw = b'{"a": 1}'
    doc = decode_fast(raw)
    hand_over(raw, doc)
    try:
        assert decode_and_parse(raw, _seen) is doc
        again = decode_and_parse(raw, _seen)  # taken: the next parse decodes for itself
        assert again == doc and again is not doc
    finally:
        hand_over(None)


def test_another_message_with_the_same_bytes_decodes_for_itself() -> None:
    raw = b'{"a": 1}'
    twin = bytes(bytearray(raw))
    assert twin == raw and twin is not raw
    hand_over(raw, {"handed": True})
    try:
        assert decode_and_parse(twin, _seen) == {"a": 1}
    finally:
        hand_over(None)


def test_exact_formats_and_inexact_numbers_decode_exactly_whatever_was_handed() -> None:
    raw = b'{"v": 1.10}'
    hand_over(raw, decode_fast(raw))
    try:
        assert decode_and_parse(raw, _seen, numbers_are_values=True) == {"v": Decimal("1.10")}
    finally:
        hand_over(None)

    def needs_exact(doc: Any) -> Any:
        value = doc["v"]
        return exact_number(value) if isinstance(value, float) else value

    hand_over(raw, decode_fast(raw))
    try:
        assert decode_and_parse(raw, needs_exact) == Decimal("1.10")  # the float's retry reads the digits
    finally:
        hand_over(None)


def test_taken_back_it_is_not_used() -> None:
    raw = b'{"a": 1}'
    hand_over(raw, {"handed": True})
    hand_over(None)
    assert decode_and_parse(raw, _seen) == {"a": 1}
