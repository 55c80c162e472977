"""Reject reasons never quote row values (issue 16, item 5).

A reason travels in the dead letter's ``binlake.error.reason`` header, in logs and
in ``binlake normalize``'s output, places where a row value (personal data) does
not belong. It names the field or column, its declared type and what was
expected, and describes the value by kind and size only.

Every format's parser, through the registry and through ``auto``, is fed the
golden corpus with each row value replaced, one at a time, by a hostile one
carrying a marker: text where a number, date, time, binary or decimal is
expected, numbers beyond a type's range, nested JSON, and JSON documents whose
syntax breaks right at the marker. No reject reason may contain the marker. The
native fast lane must decline every message the Python parser rejects, so that
every reason comes from Python.
"""

from __future__ import annotations

import base64
import copy
import functools
import io
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import fastavro
import pytest

from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_VALUE, MALFORMED, describe
from binlake.shared.parsing.result import Rejected
from tests.corpus_cases import Case, cases

pytestmark = pytest.mark.unit

MARK = "SECRET-4242"
NUMBER_MARK = "98765432"
"""Digits every hostile number starts with; a reason holding them quotes (part of) the value."""

TEXTS = (
    MARK,
    f"12{MARK}",
    f"-{MARK}",
    f"{MARK}.5",
    f"2020-01-01 {MARK}",  # a date-time followed by a "zone name"
    f"2020-01-01T10:00:00{MARK}",
    f"10:00:{MARK}",
    f"[1, {MARK}]",  # a DRS byte list
    f"{MARK}==",  # not base64
    f"\u4e00{MARK}",  # beyond ISO-8859-1 and ASCII
    f"{MARK}\udc80",  # a lone surrogate (orjson refuses to write it back)
)
NUMBERS = (987654321, -987654321, 987654321987, 98765432198765432198765, 9876543219.875)
NESTED: tuple[Any, ...] = ({"k": MARK}, [MARK], {MARK: 1})
BYTES = (b"\xff\xfe" + MARK.encode(), MARK.encode() + b"\x80")

TYPED = frozenset(
    {
        "canal-json",
        "drs-json",
        "drs-json-c",
        "drs-avro",
        "kafkariver-canal",
        "debezium-json",
        "debezium-smt",
        "oms-extend-column-type",
        "oms-dataworks",
        "oms-avro",
    }
)
"""Formats that declare column types: a hostile value of the wrong kind must reach a bad_value reject."""

# Where each JSON format keeps its row images: paths of keys, "*" for every key or index.
IMAGES: dict[str, tuple[tuple[str, ...], ...]] = {
    "canal-json": (("data", "*", "*"), ("old", "*", "*")),
    "drs-json": (("data", "*", "*"), ("old", "*", "*")),
    "drs-json-c": (("data", "*", "*"), ("old", "*", "*")),
    "ckafka-v1": (("NEW_VALUES", "*"), ("OLD_VALUES", "*"), ("data", "*", "*"), ("old", "*", "*")),
    "kafkariver-canal": (("columns", "*", "v"), ("columns", "*", "origin_val")),
    "maxwell-json": (("data", "*"), ("old", "*")),
    "ogg-json": (("before", "*"), ("after", "*")),
    "debezium-json": (("before", "*"), ("after", "*"), ("payload", "before", "*"), ("payload", "after", "*")),
    "debezium-smt": (("*",), ("payload", "*")),
    "oms-default": (("prevStruct", "*"), ("postStruct", "*")),
    "oms-extend-column-type": (("prevStruct", "*"), ("postStruct", "*")),
    "oms-dataworks": (("payload", "before", "data", "*"), ("payload", "after", "data", "*")),
    "oms-shareplex": (("data", "*"), ("key", "*")),
}
METADATA = frozenset({"__light_type", "schema", "payload"})
"""Keys a ``*`` skips: type maps and envelopes, not column values (and ``__``-prefixed SMT fields)."""
AVRO_IMAGES = frozenset({"afterimages", "beforeimages", "data", "old"})
AVRO_METADATA = frozenset({"charset", "precision", "scale", "type"})
"""Parts of a DTS value record that describe the column (schema), not the row."""


@dataclass(frozen=True)
class Hostile:
    format_id: str
    source: str
    raw: bytes
    ctx: ParseContext


def _leaf_paths(doc: Any, pattern: tuple[str, ...], prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if not pattern:
        yield prefix
        return
    step, rest = pattern[0], pattern[1:]
    if step != "*":
        if isinstance(doc, dict) and step in doc:
            yield from _leaf_paths(doc[step], rest, (*prefix, step))
        return
    if isinstance(doc, dict):
        keys: list[Any] = [key for key in doc if key not in METADATA and not str(key).startswith("__")]
    elif isinstance(doc, list):
        keys = list(range(len(doc)))
    else:
        return
    for key in keys:
        yield from _leaf_paths(doc[key], rest, (*prefix, key))


def _json_bytes(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _broken_around_mark(raw: bytes) -> Iterator[bytes]:
    """JSON documents whose syntax breaks at the marker (a parser's error must not echo it)."""
    quoted = json.dumps(MARK).encode()
    at = raw.find(quoted)
    if at < 0:
        return
    end = at + len(quoted)
    yield raw[: end - 1]  # truncated inside the string
    yield raw[:at] + MARK.encode() + raw[end:]  # unquoted
    yield raw[:at] + b'"\\q' + MARK.encode() + b'"' + raw[end:]  # an invalid escape
    yield raw[:at] + b'"' + MARK.encode() + b'\x01"' + raw[end:]  # a control character
    yield raw[:at] + b'"' + MARK.encode() + b'\xff"' + raw[end:]  # invalid UTF-8
    yield raw[:at] + b'"\\ud800' + MARK.encode() + b'"' + raw[end:]  # a lone surrogate escape
    yield raw + b" " + MARK.encode()  # extra data


def _json_hostiles(case: Case, format_id: str) -> Iterator[bytes]:
    doc = json.loads(case.raw())
    patterns = IMAGES[format_id]
    for pattern in patterns:
        for path in _leaf_paths(doc, pattern):
            for value in (*TEXTS, *NUMBERS, *NESTED):
                raw = _json_bytes(_set(doc, path, value))
                yield raw
                if value == MARK:
                    yield from _broken_around_mark(raw)


def _avro_schema(case: Case) -> Any:
    if case.format_id == "oms-avro":
        from binlake.services.oms_avro.parser import parsed_schema

        return parsed_schema()
    from binlake.services.drs_avro.parser import writer_schema

    return writer_schema(case.context())


def _avro_leaves(value: Any, path: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        yield from _avro_leaves(value[1], (*path, 1))
    elif isinstance(value, dict):
        for key, item in value.items():
            if key not in AVRO_METADATA:
                yield from _avro_leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _avro_leaves(item, (*path, index))
    else:
        yield path, value


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    step, rest = path[0], path[1:]
    if isinstance(doc, tuple):
        return (doc[0], _set(doc[1], rest, value))
    out = copy.copy(doc)
    out[step] = _set(doc[step], rest, value)
    return out


def _avro_hostiles(case: Case) -> Iterator[bytes]:
    schema = _avro_schema(case)
    decoded: Any = fastavro.schemaless_reader(io.BytesIO(case.raw()), schema, None, return_record_name=True)
    record: dict[str, Any] = decoded
    for key, images in record.items():
        if key.lower() not in AVRO_IMAGES or images is None:
            continue
        for path, leaf in _avro_leaves(images, ()):
            if isinstance(leaf, str):
                candidates: tuple[Any, ...] = TEXTS[:-1]  # Avro strings are UTF-8: no lone surrogate
            elif isinstance(leaf, bytes):
                candidates = BYTES
            elif isinstance(leaf, int) and not isinstance(leaf, bool):
                candidates = NUMBERS[:4]
            else:
                continue
            for value in candidates:
                mutated = dict(record)
                mutated[key] = _set(images, path, value)
                out = io.BytesIO()
                try:
                    fastavro.schemaless_writer(out, schema, mutated)
                except (ValueError, TypeError, OverflowError):
                    continue  # the schema cannot carry it (a number beyond an int field)
                yield out.getvalue()


def _format_of(case: Case) -> str:
    """The format a corpus message is in (``auto``'s own cases: the one it detects)."""
    if case.format_id != "auto":
        return case.format_id
    from binlake.services.auto.parser import detect

    return detect(json.loads(case.raw()))


def hostiles() -> list[Hostile]:
    out: list[Hostile] = []
    for case in cases():
        if case.expected_reject() is not None:
            continue
        ctx = case.context().at("hostile", 3, 41)
        if case.format_id in ("oms-avro", "drs-avro"):
            out.extend(Hostile(case.format_id, case.id, raw, ctx) for raw in _avro_hostiles(case))
            continue
        try:
            format_id = _format_of(case)
        except Exception:  # noqa: BLE001 - auto's binary cases (DTS Records)
            continue
        for index, raw in enumerate(_json_hostiles(case, format_id)):
            out.append(Hostile(case.format_id, case.id, raw, ctx))
            if case.format_id != "auto" and not ctx.options and not ctx.source_table and index % 5 == 0:
                out.append(Hostile("auto", case.id, raw, ctx))  # auto detects, then parses (a fifth: time)
    return out


HOSTILES = hostiles()


def _reasons() -> tuple[list[tuple[Hostile, Rejected]], Counter[tuple[str, str]]]:
    rejected: list[tuple[Hostile, Rejected]] = []
    codes: Counter[tuple[str, str]] = Counter()
    for hostile in HOSTILES:
        outcome = registry.get(hostile.format_id)(hostile.raw, hostile.ctx)
        if isinstance(outcome, Rejected):
            rejected.append((hostile, outcome))
            codes[hostile.format_id, outcome.code] += 1
    return rejected, codes


@functools.cache
def _outcomes() -> tuple[list[tuple[Hostile, Rejected]], Counter[tuple[str, str]]]:
    return _reasons()


def _leaks(reason: str) -> bool:
    return MARK in reason or NUMBER_MARK in reason or "\\u4e00" in reason or "\u4e00" in reason


def test_every_format_gets_hostile_messages() -> None:
    assert {hostile.format_id for hostile in HOSTILES} == set(registry.format_ids())


def test_no_reject_reason_quotes_a_row_value() -> None:
    rejected, codes = _outcomes()
    leaks = [f"{h.format_id} ({h.source}): {r.code}: {r.reason}" for h, r in rejected if _leaks(r.reason)]
    assert not leaks, f"{len(leaks)} reason(s) quote the value, e.g.\n" + "\n".join(leaks[:20])
    # The test means something only where the hostile values were refused: every format
    # rejects some, and each format that declares types refuses a value of the wrong kind.
    formats = {format_id for format_id, _ in codes}
    assert formats == set(registry.format_ids()), sorted(set(registry.format_ids()) - formats)
    assert {format_id for format_id, code in codes if code == BAD_VALUE} >= TYPED
    assert {format_id for format_id, code in codes if code == MALFORMED} >= set(IMAGES)


def test_value_reasons_say_column_type_and_kind() -> None:
    rejected, _ = _outcomes()
    bad_values = [r.reason for _, r in rejected if r.code == BAD_VALUE]
    assert all("column " in reason for reason in bad_values), [r for r in bad_values if "column " not in r][:10]
    described = ("a string of", "an integer of", "a decimal number of", "an array of", "an object of")
    kinds = Counter(next((d for d in described if d in reason), "other") for reason in bad_values)
    assert all(kinds[d] for d in described), kinds


def test_a_canal_reason_names_column_type_and_value_kind() -> None:
    raw = json.dumps(
        {
            "database": "shop",
            "table": "people",
            "es": 1700000000000,
            "ts": 1700000000123,
            "id": 42,
            "isDdl": False,
            "sql": "",
            "pkNames": ["id"],
            "mysqlType": {"id": "int(11)"},
            "sqlType": None,
            "type": "INSERT",
            "data": [{"id": MARK}],
        }
    ).encode()
    outcome = registry.get("canal-json")(raw, ParseContext(topic="t"))
    assert outcome == Rejected(
        BAD_VALUE, f"data[0] column 'id' (type int(11)): expected an integer, got {describe(MARK)}"
    )
    assert describe(MARK) == "a string of 11 characters"


def test_binlake_normalize_dead_letters_without_the_value(tmp_path: Path) -> None:
    canal = [h.raw for h in HOSTILES if h.format_id == "canal-json" and b"\n" not in h.raw and not h.ctx.options]
    source = tmp_path / "hostile.jsonl"
    source.write_bytes(b"\n".join(canal) + b"\n")
    dlq = tmp_path / "dlq.jsonl"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "binlake.shared.cli.main",
            "normalize",
            "--format",
            "canal-json",
            "--dlq",
            str(dlq),
            str(source),
        ],
        capture_output=True,
        check=False,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    letters = [json.loads(line) for line in dlq.read_text().splitlines()]
    assert len(letters) > 100
    assert {letter["code"] for letter in letters} >= {BAD_VALUE, MALFORMED}
    for letter in letters:
        assert not _leaks(letter["reason"]), letter["reason"]
        assert base64.b64decode(letter["raw_base64"]) == canal[letter["line"] - 1]  # the raw bytes kept whole
    assert MARK.encode() not in dlq.read_bytes()
    assert MARK.encode() not in result.stderr
