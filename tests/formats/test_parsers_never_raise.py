"""Property tests: no input makes a parser raise anything but RejectError.

Random bytes, byte-flipped golden messages and structurally mutated golden
messages (values swapped for other JSON types, keys dropped) go through every
registered parser. Whatever a parser accepts must also survive the codecs: the
JSON view renders it and the Avro encoding round-trips it unchanged.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.shared.codec import avro, json_view
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import REJECT_CODES, RejectError
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.validate import check_event
from tests.corpus_cases import cases

pytestmark = pytest.mark.unit

FORMATS = registry.format_ids()
JSON_SAMPLES: dict[str, list[Any]] = {}
RAW_SAMPLES: dict[str, list[bytes]] = {}
CONTEXTS: dict[str, ParseContext] = {}
for _case in cases():
    raw = _case.raw()
    CONTEXTS.setdefault(_case.format_id, _case.context().at("prop", 0, 7))
    RAW_SAMPLES.setdefault(_case.format_id, []).append(raw)
    with contextlib.suppress(ValueError):  # binary samples have no JSON form
        JSON_SAMPLES.setdefault(_case.format_id, []).append(json.loads(raw))

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)


def _check(format_id: str, raw: bytes) -> None:
    parser = registry.get(format_id)
    ctx = CONTEXTS.get(format_id, ParseContext(topic="prop", offset=7, source_table="db.tbl"))
    try:
        outcome = parser.parse(raw, ctx)
        for event in outcome.events:
            check_event(event)  # the registry boundary's envelope check
    except RejectError as exc:
        assert exc.code in REJECT_CODES
        assert exc.reason
        return
    assert isinstance(outcome, Parsed)
    for event in outcome.events:
        json_view.render(event)
        assert avro.decode(avro.encode(event)) == event


def _mutate(doc: Any, path_choices: list[int], replacement: Any, drop: bool) -> Any:
    """Replace (or drop) one node of ``doc`` chosen by ``path_choices``."""
    if not path_choices or not isinstance(doc, dict | list) or not doc:
        return replacement
    head, rest = path_choices[0], path_choices[1:]
    if isinstance(doc, dict):
        key = list(doc)[head % len(doc)]
        copy = dict(doc)
        if drop and not rest:
            del copy[key]
        else:
            copy[key] = _mutate(doc[key], rest, replacement, drop)
        return copy
    index = head % len(doc)
    items = list(doc)
    items[index] = _mutate(doc[index], rest, replacement, drop)
    return items


@pytest.mark.parametrize("format_id", FORMATS)
@given(raw=st.binary(max_size=300))
def test_random_bytes_never_raise(format_id: str, raw: bytes) -> None:
    _check(format_id, raw)


@pytest.mark.parametrize("format_id", FORMATS)
@given(data=st.data())
def test_flipped_bytes_never_raise(format_id: str, data: st.DataObject) -> None:
    samples = RAW_SAMPLES.get(format_id)
    if not samples:
        pytest.skip(f"no golden samples for {format_id} yet")
    raw = bytearray(data.draw(st.sampled_from(samples)))
    for _ in range(data.draw(st.integers(1, 4))):
        if raw:
            raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    _check(format_id, bytes(raw))


@pytest.mark.parametrize("format_id", FORMATS)
@given(
    data=st.data(),
    path=st.lists(st.integers(min_value=0, max_value=50), min_size=1, max_size=5),
    replacement=json_values,
    drop=st.booleans(),
)
def test_mutated_messages_never_raise(
    format_id: str, data: st.DataObject, path: list[int], replacement: Any, drop: bool
) -> None:
    samples = JSON_SAMPLES.get(format_id)
    if not samples:
        pytest.skip(f"no JSON golden samples for {format_id}")
    doc = data.draw(st.sampled_from(samples))
    _check(format_id, json.dumps(_mutate(doc, path, replacement, drop)).encode())
