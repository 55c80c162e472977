"""Decoding JSON vendor messages fast, and exactly when it matters.

Most vendor messages are decoded with orjson, which is several times faster than
the standard library. orjson reads every non-integer number (and integers above
2**64) as a binary float, which would corrupt decimals such as the
hundreds-of-digits values OceanBase OMS emits. So parsers never accept such a
float silently: when a value converter meets a float where the exact digits
matter, it raises ``InexactNumber`` and ``decode_and_parse`` decodes the message
again with the kernel's exact reader (``load_json``), reading numbers as ``Decimal`` and
``int`` as the standard library would, and wording a syntax error as it does.
Messages whose numbers are all strings or small integers (Canal, DRS) never pay
for the second decode; formats that write values as JSON numbers (Maxwell,
GoldenGate, OMS) decode exactly at once (``numbers_are_values``).

A document nested deeper than ``MAX_DEPTH`` is malformed on either path.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any, Final, TypeVar

import orjson

from binlake.shared.kernel._kernel import load_json, nests_deeper
from binlake.shared.parsing.errors import BAD_FIELD, MALFORMED, MISSING_FIELD, RejectError

T = TypeVar("T")


class InexactNumber(Exception):
    """A float from the fast decoder reached a place that needs exact digits."""


MAX_DEPTH: Final = 512
"""The deepest nesting of arrays and objects a message may have (a MySQL JSON value nests at most 100)."""


def check_depth(raw: bytes) -> None:
    """Reject a document nested deeper than ``MAX_DEPTH`` (the kernel counts; brackets in strings are text)."""
    if nests_deeper(raw, MAX_DEPTH):
        raise RejectError(MALFORMED, f"invalid JSON: the document nests deeper than {MAX_DEPTH} levels")


def decode_fast(raw: bytes) -> Any:
    check_depth(raw)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson also refuses valid JSON it cannot hold (numbers beyond the double
        # range such as 1e400): the exact decoder decides, and words the error.
        return decode_exact(raw)


def decode_exact(raw: bytes) -> Any:
    """``raw`` read with exact numbers (``int``, ``Decimal``) by the kernel (``load_json``), which reads
    what the standard library's ``json`` reads and words a syntax error as it does."""
    check_depth(raw)
    try:
        doc, problem = load_json(raw)
    except ArithmeticError as exc:  # decimal.InvalidOperation: an exponent beyond Decimal's range
        raise RejectError(MALFORMED, "invalid JSON: a number's exponent is beyond any SQL or decimal range") from exc
    except ValueError as exc:  # int()'s digit limit
        raise RejectError(MALFORMED, f"invalid JSON: {_syntax_problem(exc)}") from exc
    if problem is None:
        return doc
    rule, at = problem
    if at >= 0:
        # The standard library's position wording (line, column) of the kernel's character index.
        position = json.JSONDecodeError(rule, raw.decode("utf-8"), at)
        raise RejectError(MALFORMED, f"invalid JSON: {_syntax_problem(position)}")
    if rule == "utf-8":
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:  # its message quotes the byte: the position and rule only
            raise RejectError(MALFORMED, f"invalid UTF-8 at byte {exc.start}: {exc.reason}") from exc
    if rule == "surrogate":
        # A \u escape of a lone surrogate, read into a str no UTF-8 encoder takes: the event would fail to
        # encode downstream (and crash ``binlake normalize``'s JSON output), unless a repeated key dropped it.
        if _all_text(doc):
            return doc
        raise RejectError(MALFORMED, "invalid JSON: a \\u escape of a lone UTF-16 surrogate (D800-DFFF) is no text")
    raise RejectError(MALFORMED, f"invalid JSON: {rule}")


def _all_text(doc: Any) -> bool:
    """Whether every string (keys too) in a decoded document is Unicode text (encodes as UTF-8)."""
    stack: list[Any] = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if not item.isascii():
                try:
                    item.encode("utf-8")
                except UnicodeEncodeError:
                    return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _syntax_problem(exc: Exception) -> str:
    """A JSON syntax error without the document's text (reasons carry no row values): the rule (the
    standard library's fixed text) and its position; or a number ``int()`` refuses (its digit limit)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg}: line {exc.lineno} column {exc.colno} (char {exc.pos})"
    return f"a number beyond what Python reads ({type(exc).__name__})"


_handed_raw: bytes | None = None
_handed_doc: Any = None


def hand_over(raw: bytes | None, doc: Any = None) -> None:
    """Give the next ``decode_and_parse`` of this very ``raw`` object its ``decode_fast`` document, so a
    message is not decoded fast twice (``auto`` decodes to detect the format, then the format's parser
    decodes). ``hand_over(None)`` takes back what was not used. Parsing is synchronous: nothing else can
    run between the two calls, and the document is the one ``decode_fast`` would give again."""
    global _handed_raw, _handed_doc
    _handed_raw, _handed_doc = raw, doc


def decode_and_parse(raw: bytes, parse_doc: Callable[[Any], T], *, numbers_are_values: bool = False) -> T:
    """Decode ``raw`` fast and parse it; redo both exactly if a number needs it.

    ``numbers_are_values``: the format writes column values as JSON numbers
    (Maxwell, GoldenGate, OceanBase OMS), so a message almost always holds a
    DECIMAL or DOUBLE that the fast path would have to redo: the exact decode
    runs at once. (Looking for such a number in the bytes first cost as much as
    the exact decode itself, up to 10 us on a wide OMS DataWorks row.)
    """
    if numbers_are_values:
        return parse_doc(decode_exact(raw))
    global _handed_raw, _handed_doc
    if _handed_raw is raw:
        doc, _handed_raw, _handed_doc = _handed_doc, None, None
    else:
        doc = decode_fast(raw)
    try:
        return parse_doc(doc)
    except InexactNumber:
        return parse_doc(decode_exact(raw))


def exact_number(value: float) -> Decimal:
    """Called by converters on a fast-decoded float: always asks for the exact decode."""
    raise InexactNumber("a float needs its exact digits")  # never the value: it may end in a reason


# ---------------------------------------------------------------- field access
# Small checked accessors for envelope fields, so every parser rejects a missing
# or mistyped field with the same precise wording.


def obj(doc: Any, what: str = "message") -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise RejectError(BAD_FIELD, f"{what} must be a JSON object, got {_kind(doc)}")
    return doc


def req(doc: dict[str, Any], key: str) -> Any:
    value = doc.get(key)
    if value is None:
        raise RejectError(MISSING_FIELD, f"required field {key!r} is missing or null")
    return value


def req_str(doc: dict[str, Any], key: str) -> str:
    value = req(doc, key)
    if not isinstance(value, str):
        raise RejectError(BAD_FIELD, f"field {key!r} must be a string, got {_kind(value)}")
    return value


def opt_str(doc: dict[str, Any], key: str) -> str | None:
    value = doc.get(key)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise RejectError(BAD_FIELD, f"field {key!r} must be a string, got {_kind(value)}")
    if isinstance(value, int | Decimal):
        return str(value)
    if isinstance(value, float):
        raise InexactNumber(key)
    raise RejectError(BAD_FIELD, f"field {key!r} must be a string, got {_kind(value)}")


def opt_int(doc: dict[str, Any], key: str) -> int | None:
    """An integer field that vendors send as a JSON number or a digit string."""
    value = doc.get(key)
    if value is None:
        return None
    return as_int(value, key)


def req_int(doc: dict[str, Any], key: str) -> int:
    return as_int(req(doc, key), key)


def as_int(value: Any, what: str) -> int:
    if isinstance(value, bool):
        raise RejectError(BAD_FIELD, f"field {what!r} must be an integer, got a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text.removeprefix("-").isdecimal() and len(text) <= 40:  # isdecimal: what int() reads
            return int(text)
        raise RejectError(BAD_FIELD, f"field {what!r} must be an integer, got {value[:60]!r}")
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**53:
            return int(value)
        raise InexactNumber(what)
    if (
        isinstance(value, Decimal)
        and value.is_finite()
        and value.adjusted() <= 40
        and value == value.to_integral_value()
    ):
        return int(value)  # the digit bound keeps int() from expanding 1e4000000000 forever
    raise RejectError(BAD_FIELD, f"field {what!r} must be an integer, got {_kind(value)}")


def opt_obj(doc: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = doc.get(key)
    if value is None or isinstance(value, dict):
        return value
    raise RejectError(BAD_FIELD, f"field {key!r} must be an object or null, got {_kind(value)}")


def opt_list(doc: dict[str, Any], key: str) -> list[Any] | None:
    value = doc.get(key)
    if value is None or isinstance(value, list):
        return value
    raise RejectError(BAD_FIELD, f"field {key!r} must be an array or null, got {_kind(value)}")


def str_list(value: Any, what: str) -> list[str]:
    """A list of strings (primary key names and the like); null is an empty list."""
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise RejectError(BAD_FIELD, f"field {what!r} must be an array of strings")
    return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | Decimal):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
