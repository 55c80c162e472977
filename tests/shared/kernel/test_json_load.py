"""The kernel's exact JSON reader (``load_json``, ``shared/kernel/src/json_load.rs``) against the standard
library, the behaviour it keeps: ``json.JSONDecoder(parse_float=Decimal)`` over the UTF-8 text.

For every input both give the same document (types and key order too) or the same refusal: the same
rule at the same character position, the same exception from ``int()`` or ``Decimal()``, NaN and the
infinities refused, a lone surrogate escape read into the ``str`` (no encoder takes it; the caller
rejects it where it remains in the document). Inputs: the golden corpus's JSON messages, generated
traffic of every JSON format, hypothesis-made documents, real messages mutated byte by byte and the fuzz
baseline's first inputs.
"""

from __future__ import annotations

import json
import random
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.shared.cli.generate import messages
from binlake.shared.generate import render
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel._kernel import load_json, nests_deeper
from binlake.shared.parsing.errors import MALFORMED, RejectError
from binlake.shared.parsing.jsondoc import decode_exact
from tests.corpus_cases import cases
from tests.fuzz.baseline import inputs
from tests.fuzz.seeds import corpus_targets

pytestmark = pytest.mark.unit

JSON_FORMATS = sorted(f for f in render.RENDERERS if "avro" not in f)


class _Constant(ValueError):
    pass


def _no_constant(name: str) -> Any:
    raise _Constant(f"{name} is not valid JSON")


_STDLIB = json.JSONDecoder(parse_float=Decimal, parse_constant=_no_constant)


def _all_text(doc: Any) -> bool:
    stack = [doc]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            stack.extend(item)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


_TRAILING_COMMA = "Illegal trailing comma before end of "
"""Python 3.13's rule for a comma right before ``}`` or ``]``, at the comma. The kernel words every
refusal as 3.11 and 3.12 do, on every Python (a reject's reason does not hang on the interpreter)."""


def _as_before_3_13(exc: json.JSONDecodeError) -> tuple[Any, ...]:
    """3.13's trailing-comma refusal as 3.11 words it: the next token, the closing bracket, is where a
    member name (object) or a value (array) was expected."""
    closing = exc.pos + 1
    while exc.doc[closing] in " \t\n\r":
        closing += 1
    rule = "Expecting property name enclosed in double quotes" if exc.msg.endswith("object") else "Expecting value"
    return ("syntax", rule, closing)


def _stdlib(raw: bytes) -> tuple[Any, ...]:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return ("utf-8",)
    try:
        if text.startswith("\ufeff"):
            json.loads(text)  # raises its BOM error
        doc = _STDLIB.decode(text)
    except json.JSONDecodeError as exc:
        if exc.msg.startswith(_TRAILING_COMMA):
            return _as_before_3_13(exc)
        return ("syntax", exc.msg.partition(": ")[0], exc.pos)
    except _Constant as exc:
        return ("reason", str(exc))
    except (ValueError, ArithmeticError) as exc:
        return ("raised", type(exc).__name__)
    return ("doc", repr(doc)) if _all_text(doc) else ("surrogate",)


def _kernel(raw: bytes) -> tuple[Any, ...]:
    try:
        doc, problem = load_json(raw)
    except (ValueError, ArithmeticError) as exc:
        return ("raised", type(exc).__name__)
    if problem is None:
        return ("doc", repr(doc))
    rule, at = problem
    if rule == "surrogate":  # the document, with a lone surrogate escape read somewhere in it
        return ("doc", repr(doc)) if _all_text(doc) else ("surrogate",)
    if rule == "utf-8":
        return (rule,)
    return ("syntax", rule, at) if at >= 0 else ("reason", rule)


def _same(raw: bytes) -> None:
    assert _kernel(raw) == _stdlib(raw), raw[:200]


def _messages() -> list[bytes]:
    out = [raw for raw in (case.raw() for case in cases()) if raw.lstrip()[:1] in (b"{", b"[")]
    for format_id in JSON_FORMATS:
        out += [raw for _, raw in messages(format_id, Workload(seed=5, tables=3), 30, "UTC")]
    return out


def test_golden_and_generated_messages_read_alike() -> None:
    messages = _messages()
    assert len(messages) > 300
    for raw in messages:
        _same(raw)


def test_mutated_messages_read_alike_or_are_refused_alike() -> None:
    rng = random.Random(47)
    alphabet = b'{}[]",:\\/ 0123456789.eE+-ntrufalsbuNIaiy\x00\x1f\xc3\xa9\xed\xa0\x80dDcCfF'
    seeds = _messages()[::3]
    for seed in seeds:
        for _ in range(40):
            mutated = bytearray(seed)
            for _ in range(rng.randint(1, 3)):
                at = rng.randrange(len(mutated) + 1)
                roll = rng.random()
                if roll < 0.4 and mutated:
                    del mutated[min(at, len(mutated) - 1)]
                elif roll < 0.8:
                    mutated[at:at] = bytes([rng.choice(alphabet)])
                else:
                    del mutated[at:]
            _same(bytes(mutated))


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"  ",
        b"[]",
        b"{}",
        b" 1 ",
        b"-0",
        b"0.5e-3",
        b"1E+9",
        b"1.",
        b"1.e5",
        b"01",
        b"-",
        b"1e",
        b"1e+",
        b"12345678901234567890123",
        b"-9223372036854775808",
        b"9223372036854775808",
        b'"\\ud83d\\ude00"',
        b'"\\ud83dx"',
        b'"\\ud800\\u0041"',
        b'"\\udc00"',
        b'{"\\ud800": 1}',
        b'{"a": "\\ud800", "a": "x"}',
        b'{"a": {"b": ["\\udfff"]}, "a": 1}',
        b'{"a": "\\ud800", "b": "\\ud800x\\u00e9"}',
        b'"\\ud800\\u12"',
        b'"\\u12"',
        b'"\\u1234',
        b'"\\x"',
        b'"a\x01b"',
        b'"abc',
        b'"abc\\',
        b'{"a":1,"a":2,"b":{"a":[true,false,null]}}',
        b'{"a" 1}',
        b'{"a":1,}',
        b"[1,]",
        b"[1 2]",
        b"{1:2}",
        b"\xef\xbb\xbf{}",
        b"NaN",
        b"[-Infinity]",
        b"Infinity",
        b"[1]x",
        b'{"a":"\xc3\xa9\\n\\t\\/"}\n',
        b"\xff",
        b'"\xed\xa0\x80"',
        b"1e999999999999999999999",
        b"9" * 5000,
    ],
)
def test_edge_cases_read_alike(raw: bytes) -> None:
    _same(raw)


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**30), max_value=10**30)
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_DOCS = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5),
    max_leaves=25,
)


def _dump(doc: Any, ensure_ascii: bool) -> str:
    if isinstance(doc, Decimal):
        return str(doc)
    if isinstance(doc, dict):
        members = ", ".join(
            f"{json.dumps(k, ensure_ascii=ensure_ascii)}: {_dump(v, ensure_ascii)}" for k, v in doc.items()
        )
        return "{" + members + "}"
    if isinstance(doc, list):
        return "[" + ",".join(_dump(v, ensure_ascii) for v in doc) + "]"
    return json.dumps(doc, ensure_ascii=ensure_ascii)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(doc=_DOCS, ensure_ascii=st.booleans())
def test_hypothesis_documents_read_alike(doc: Any, ensure_ascii: bool) -> None:
    try:
        raw = _dump(doc, ensure_ascii).encode("utf-8")
    except UnicodeEncodeError:
        return  # a lone surrogate hypothesis drew into a str: no UTF-8 text to read
    _same(raw)


def test_a_syntax_error_is_worded_as_the_standard_library_words_it() -> None:
    with pytest.raises(RejectError) as rejected:
        decode_exact(b'{"a": 1,\n "b" 2}')
    assert rejected.value.code == MALFORMED
    assert rejected.value.reason == "invalid JSON: Expecting ':' delimiter: line 2 column 6 (char 14)"
    with pytest.raises(RejectError) as rejected:
        decode_exact(b'{"a": "\\ud800"}')
    assert "lone UTF-16 surrogate" in rejected.value.reason
    with pytest.raises(RejectError) as rejected:
        decode_exact(b'{"a": NaN}')
    assert rejected.value.reason == "invalid JSON: NaN is not valid JSON"


def test_numbers_are_exact() -> None:
    doc, problem = load_json(b'{"d": 6189383903010612512264240367.0582748793, "e": 1.50, "i": 123456789012345678901}')
    assert problem is None
    assert doc == {
        "d": Decimal("6189383903010612512264240367.0582748793"),
        "e": Decimal("1.50"),
        "i": 123456789012345678901,
    }
    assert str(doc["e"]) == "1.50"


def test_the_fuzz_baselines_inputs_read_alike() -> None:
    """The first inputs of ``make fuzz``'s baseline of every JSON format: seeds and byte mutations, with
    repeated keys, surrogate escapes and broken syntax the formats' own seeds hold."""
    targets = corpus_targets()
    for format_id in JSON_FORMATS:
        target = targets[format_id]
        for data in inputs(target, 1_500):
            _, raw = target.split(data)
            _same(raw)


_NESTING = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)
"""A JSON string (skipped whole: brackets inside it are text) or a bracket: the depth rule spelled out."""


def _nests_deeper(raw: bytes, limit: int) -> bool:
    depth = 0
    for token in _NESTING.finditer(raw):
        char = token.group()
        depth += 1 if char in (b"[", b"{") else -1 if char in (b"]", b"}") else 0
        if depth > limit:
            return True
    return False


@settings(max_examples=2_000, deadline=None)
@given(raw=st.binary(max_size=40).map(lambda b: bytes(b'[]{}"\\a\n'[c % 8] for c in b)), limit=st.integers(0, 6))
def test_nesting_is_counted_as_the_rule_says(raw: bytes, limit: int) -> None:
    assert nests_deeper(raw, limit) == _nests_deeper(raw, limit)


@pytest.mark.parametrize("limit", [0, 254, 255, 256, 511, 512, 513, 1000])
def test_nesting_is_counted_across_long_documents(limit: int) -> None:
    """The bracket count runs in blocks of 255 bytes: documents longer than a block, with every byte value
    between the brackets but the brackets, quote and backslash themselves."""
    noise = bytes(c for c in range(256) if c not in b'"\\[]{}')
    for depth in (limit - 1, limit, limit + 1):
        if depth < 0:
            continue
        for opening in (b"[", b"{"):
            raw = noise + (opening + noise[:3]) * depth + b"]" * depth
            assert nests_deeper(raw, limit) == _nests_deeper(raw, limit) == (depth > limit)
