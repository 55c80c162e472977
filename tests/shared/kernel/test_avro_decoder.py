"""The kernel's Avro decoder (``AvroDecoder``, ``shared/kernel/src/avro_decode.rs``) against fastavro.

For every input both decoders accept with equal values (types too) and equal end positions, or both
refuse; the only difference allowed is the kernel refusing what fastavro reads leniently (``_LENIENT``):
a negative union or enum index (fastavro indexes from the end of its list), a varint beyond 64 bits
(fastavro wraps it), a boolean byte other than 0 or 1 (fastavro reads true). Inputs: the golden corpus
of oms-avro and drs-avro, generated traffic, hypothesis-made schemas with data covering every type, and
truncated or mutated real messages. Then each error: its message names the problem and its offset, never
the data.
"""

from __future__ import annotations

import io
import json
import math
import random
import re
import struct
from typing import Any

import fastavro
import pytest
from fastavro.read import LOGICAL_READERS
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.services.drs_avro.parser import writer_schema
from binlake.services.oms_avro.parser import parsed_schema
from binlake.shared.generate import render
from binlake.shared.kernel._kernel import AvroDecoder
from binlake.shared.parsing.context import ParseContext
from tests.corpus_cases import Case, cases

pytestmark = pytest.mark.unit

MARK = b"SECRET-4242"
_LENIENT = re.compile(r"is -\d+, outside 0\.\.\d+|runs beyond 64 bits|is neither 0 nor 1")
"""What the kernel refuses and fastavro reads (see the module's docstring)."""


def _decoder(schema: Any) -> AvroDecoder:
    return AvroDecoder(json.dumps(schema))


def _fastavro(schema: Any, raw: bytes, start: int = 0) -> tuple[Any, int] | None:
    stream = io.BytesIO(raw)
    stream.seek(start)
    try:
        value = fastavro.schemaless_reader(stream, schema, None, return_record_name=True)
    except Exception:  # noqa: BLE001 - any refusal
        return None
    return value, stream.tell()


def _kernel(decoder: AvroDecoder, raw: bytes, start: int = 0) -> tuple[Any, int] | str:
    try:
        return decoder.decode(raw, start)
    except ValueError as exc:
        return str(exc)


def _same(a: Any, b: Any) -> bool:
    """Equal values of the same types (True is not 1, NaN is NaN, -0.0 is not 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _agree(schema: Any, decoder: AvroDecoder, raw: bytes, start: int = 0) -> str:
    """Both accept with the same datum and end, or both refuse: "accepted" / "refused"; else fails."""
    expected = _fastavro(schema, raw, start)
    got = _kernel(decoder, raw, start)
    if expected is None:
        assert isinstance(got, str), f"the kernel accepts what fastavro refuses: {raw.hex()}"
        return "refused"
    if isinstance(got, str):
        assert _LENIENT.search(got), f"the kernel refuses ({got}) what fastavro reads: {raw.hex()}"
        return "refused"
    assert _same(got[0], expected[0]), raw.hex()
    assert got[1] == expected[1], raw.hex()
    return "accepted"


def _case_schema(case: Case) -> Any:
    if case.format_id == "oms-avro":
        return parsed_schema()
    return writer_schema(case.context())


def _avro_cases() -> list[Case]:
    return [
        case for case in cases() if case.format_id in ("oms-avro", "drs-avro") and case.name != "no-schema-configured"
    ]


def _drs_traffic_schema() -> Any:
    options = render.parse_options("drs-avro")
    return writer_schema(ParseContext(topic="t", partition=0, offset=0, options=dict(options["options"])))


def _traffic(format_id: str, n: int) -> list[bytes]:
    from tests.bench import kafka_bench

    return [raw for _, raw in kafka_bench._traffic(format_id, n)]


# ------------------------------------------------------------------ real messages


def test_golden_corpus() -> None:
    seen = {"accepted": 0, "refused": 0}
    for case in _avro_cases():
        schema = _case_schema(case)
        seen[_agree(schema, _decoder(schema), case.raw())] += 1
    assert seen["accepted"] >= 40
    assert seen["refused"] >= 4  # truncated, garbage, random bytes, an empty message, a JSON message


@pytest.mark.parametrize("format_id", ["oms-avro", "drs-avro"])
def test_generated_traffic(format_id: str) -> None:
    schema = parsed_schema() if format_id == "oms-avro" else _drs_traffic_schema()
    decoder = _decoder(schema)
    messages = _traffic(format_id, 400)
    assert all(_agree(schema, decoder, raw) == "accepted" for raw in messages)


def _mutants(raw: bytes, rng: random.Random) -> list[bytes]:
    out = [raw[:cut] for cut in range(len(raw))]  # every truncation
    for at in range(len(raw)):
        for value in {0x00, 0x01, 0x7F, 0x80, 0xFF, raw[at] ^ 0x01, raw[at] ^ 0x80}:
            out.append(raw[:at] + bytes([value]) + raw[at + 1 :])
    for _ in range(200):
        mutant = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            mutant[rng.randrange(len(mutant))] = rng.randrange(256)
        out.append(bytes(mutant))
        at = rng.randrange(len(raw))
        out.append(raw[:at] + bytes(rng.randrange(256) for _ in range(rng.randint(1, 3))) + raw[at:])
    return out


@pytest.mark.parametrize("format_id", ["oms-avro", "drs-avro"])
def test_truncated_and_mutated_messages(format_id: str) -> None:
    rng = random.Random(7)
    inputs: list[tuple[Any, bytes]] = []
    for case in _avro_cases():
        if case.format_id == format_id:
            inputs.append((_case_schema(case), case.raw()))
    traffic_schema = parsed_schema() if format_id == "oms-avro" else _drs_traffic_schema()
    inputs += [(traffic_schema, raw) for raw in _traffic(format_id, 400)[::80]]
    seen = {"accepted": 0, "refused": 0}
    decoders: dict[int, AvroDecoder] = {}
    for schema, raw in inputs:
        if not raw:
            continue
        decoder = decoders.setdefault(id(schema), _decoder(schema))
        for mutant in _mutants(raw, rng):
            seen[_agree(schema, decoder, mutant)] += 1
    assert seen["accepted"] > 1000
    assert seen["refused"] > 1000


def test_start_and_end_positions() -> None:
    decoder = _decoder("long")
    raw = b"\x02\x04\xff\x01"
    assert decoder.decode(raw) == (1, 1)
    assert decoder.decode(raw, 1) == (2, 2)
    assert decoder.decode(raw, 2) == (-128, 4)
    with pytest.raises(ValueError, match="start 5 is outside the data's 4 bytes"):
        decoder.decode(raw, 5)
    with pytest.raises(ValueError, match="start -1 is outside"):
        decoder.decode(raw, -1)
    with pytest.raises(ValueError, match="truncated: a long at byte 4"):
        decoder.decode(raw, 4)


# ------------------------------------------------------------------ hypothesis: every type


def _zigzag(n: int) -> bytes:
    z = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        byte = z & 0x7F
        z >>= 7
        if z:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


class _Schemas:
    """Random schemas of every type, with namespaces, references and a recursive record."""

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw
        self.count = 0

    def name(self) -> str:
        self.count += 1
        return f"T{self.count}"

    def schema(self, depth: int, namespace: str, named: list[tuple[str, str]]) -> Any:
        """A schema; ``named``: (full name, a way to refer to it here) of the named types defined so far."""
        draw = self.draw
        kinds = ["null", "boolean", "int", "long", "float", "double", "bytes", "string", "enum", "fixed"]
        if depth == 0:
            kinds = ["record", "record", "array", "map", "union"]
        elif depth < 3:
            kinds += ["record", "array", "map", "union", "union", "record"]
        if named:
            kinds.append("ref")
        kind = draw(st.sampled_from(kinds))
        if kind == "ref":
            return draw(st.sampled_from(named))[1]
        if kind in ("null", "boolean", "int", "long", "float", "double", "bytes", "string"):
            return kind if draw(st.booleans()) else {"type": kind}
        if kind == "enum":
            name = self.name()
            symbols = draw(st.lists(st.sampled_from(["A", "B", "C", "D"]), min_size=1, max_size=4, unique=True))
            self._named(name, namespace, named)
            return {"type": "enum", "name": name, "symbols": symbols}
        if kind == "fixed":
            name = self.name()
            self._named(name, namespace, named)
            return {"type": "fixed", "name": name, "size": draw(st.integers(0, 5))}
        if kind == "array":
            return {"type": "array", "items": self.schema(depth + 1, namespace, named)}
        if kind == "map":
            return {"type": "map", "values": self.schema(depth + 1, namespace, named)}
        if kind == "union":
            branches: list[Any] = ["null"] if draw(st.booleans()) else []
            for _ in range(draw(st.integers(1, 3))):
                branch = self.schema(depth + 1, namespace, named)
                if isinstance(branch, list):
                    continue  # no union directly in a union
                branches.append(branch)
            return branches or ["null"]
        name = self.name()
        inner = namespace
        record: dict[str, Any] = {"type": "record", "name": name}
        choice = draw(st.sampled_from(["inherit", "own", "dotted", "empty"]))
        if choice == "own":
            inner = f"ns{self.count}"
            record["namespace"] = inner
        elif choice == "dotted":
            inner = f"dot{self.count}.x"
            record["name"] = f"{inner}.{name}"
        elif choice == "empty":
            inner = ""
            record["namespace"] = ""
        full = f"{inner}.{name}" if inner else name
        # The record itself, by its short name in its own namespace: recursive, optional.
        fields: list[dict[str, Any]] = [{"name": "self", "type": ["null", name]}] if draw(st.booleans()) else []
        for index in range(draw(st.integers(0, 3))):
            fields.append({"name": f"f{index}", "type": self.schema(depth + 1, inner, named)})
        record["fields"] = fields
        # Named after its fields: a field of its own type (not in a union) would have no finite datum.
        named.append((full, full))
        if inner == namespace:
            named.append((full, name))
        return record

    def _named(self, name: str, namespace: str, named: list[tuple[str, str]]) -> None:
        full = f"{namespace}.{name}" if namespace else name
        named.append((full, full))
        named.append((full, name))


class _Data:
    """Avro binary of a parsed schema, from hypothesis' draws: every branch, block shape and bit pattern."""

    def __init__(self, draw: st.DrawFn, named: dict[str, Any]) -> None:
        self.draw = draw
        self.named = named

    def datum(self, schema: Any, depth: int) -> bytes:
        draw = self.draw
        if isinstance(schema, list):
            choices = range(len(schema)) if depth < 6 else [i for i, s in enumerate(schema) if s == "null"] or [0]
            index = draw(st.sampled_from(list(choices)))
            return _zigzag(index) + self.datum(schema[index], depth + 1)
        if isinstance(schema, str) and schema in self.named:
            return self.datum(self.named[schema], depth)
        kind = schema if isinstance(schema, str) else schema["type"]
        if kind == "null":
            return b""
        if kind == "boolean":
            return bytes([draw(st.integers(0, 1))])
        if kind in ("int", "long"):
            bits = 31 if kind == "int" else 63
            return _zigzag(draw(st.integers(-(2**bits), 2**bits - 1)))
        if kind == "float":
            return draw(st.binary(min_size=4, max_size=4))
        if kind == "double":
            return draw(st.binary(min_size=8, max_size=8))
        if kind == "bytes":
            body = draw(st.binary(max_size=6))
            return _zigzag(len(body)) + body
        if kind == "string":
            body = draw(st.text(max_size=5)).encode("utf-8", "surrogatepass")
            return _zigzag(len(body)) + body
        if kind == "enum":
            return _zigzag(draw(st.integers(0, len(schema["symbols"]) - 1)))
        if kind == "fixed":
            return draw(st.binary(min_size=schema["size"], max_size=schema["size"]))
        if kind == "record":
            return b"".join(self.datum(field["type"], depth + 1) for field in schema["fields"])
        if kind in ("array", "map"):
            out = b""
            for _ in range(draw(st.integers(0, 2)) if depth < 6 else 0):
                items = [self._item(schema, depth) for _ in range(draw(st.integers(1, 3)))]
                body = b"".join(items)
                if draw(st.booleans()):
                    out += _zigzag(-len(items)) + _zigzag(len(body)) + body
                else:
                    out += _zigzag(len(items)) + body
            return out + b"\x00"
        raise AssertionError(kind)

    def _item(self, schema: dict[str, Any], depth: int) -> bytes:
        if schema["type"] == "array":
            return self.datum(schema["items"], depth + 1)
        key = self.draw(st.sampled_from(["a", "b", "ключ"])).encode()
        return _zigzag(len(key)) + key + self.datum(schema["values"], depth + 1)


@st.composite
def _schema_and_data(draw: st.DrawFn) -> tuple[Any, list[bytes]]:
    named: list[tuple[str, str]] = []
    schema = _Schemas(draw).schema(0, draw(st.sampled_from(["", "top"])), named)
    if isinstance(schema, dict) and schema.get("type") == "record" and "namespace" not in schema:
        schema["namespace"] = "top"
    try:
        parsed = fastavro.parse_schema(schema)
    except Exception:  # noqa: BLE001 - a reference the generator could not make valid
        return schema, []
    named_schemas: dict[str, Any] = {}
    if isinstance(parsed, dict) and "__named_schemas" in parsed:
        named_schemas = dict(parsed["__named_schemas"])
    else:
        # Not a record: fastavro's reader parses the parsed schema again, and its names may change (a
        # record of the null namespace in a namespaced one takes that namespace): the data follows that.
        parsed = fastavro.parse_schema(parsed, named_schemas=named_schemas)
    data = _Data(draw, named_schemas)
    return schema, [data.datum(parsed, 0) for _ in range(3)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(_schema_and_data())
def test_hypothesis_schemas_and_data(made: tuple[Any, list[bytes]]) -> None:
    schema, data = made
    if not data:
        return
    parsed = fastavro.parse_schema(schema)
    from_parsed = _decoder(parsed)  # a fastavro-parsed schema, as the parsers pass it
    from_raw = _decoder(schema)  # and the schema as written: namespaces resolved by the kernel
    for raw in data:
        assert _agree(parsed, from_parsed, raw) == "accepted"
        assert _agree(schema, from_raw, raw) == "accepted"
        assert _agree(parsed, from_parsed, raw + b"\x00", 0) == "accepted"  # stops at the datum's end
        if raw:
            _agree(parsed, from_parsed, raw[:-1])  # a truncation: both refuse (or both read a shorter datum)


# ------------------------------------------------------------------ fastavro's union names


def test_union_names_as_fastavro_returns_them() -> None:
    enum = {"type": "enum", "name": "E", "symbols": ["X", "Y"]}
    fixed = {"type": "fixed", "name": "F", "size": 2}
    record = {"type": "record", "name": "R", "namespace": "ns", "fields": [{"name": "a", "type": "int"}]}
    schema = {
        "type": "record",
        "name": "T",
        "namespace": "top",
        "fields": [
            {"name": "inline_enum", "type": ["null", enum]},
            {"name": "inline_fixed", "type": ["null", fixed]},
            {"name": "inline_record", "type": ["null", record]},
            {"name": "refs", "type": {"type": "array", "items": ["null", "E", "top.F", "ns.R"]}},
            {"name": "nested", "type": ["null", {"type": "record", "name": "S", "fields": []}]},
        ],
    }
    raw = b"\x02\x02" + b"\x02ab" + b"\x02\x04" + b"\x06" + b"\x02\x00" + b"\x04cd" + b"\x06\x08" + b"\x00" + b"\x02"
    parsed = fastavro.parse_schema(schema)
    expected = {
        "inline_enum": "Y",
        "inline_fixed": b"ab",
        "inline_record": ("ns.R", {"a": 2}),
        "refs": [("top.E", "X"), ("top.F", b"cd"), ("ns.R", {"a": 4})],
        "nested": ("top.S", {}),
    }
    for decoder in (_decoder(parsed), _decoder(schema)):
        assert decoder.decode(raw) == (expected, len(raw))
    assert _agree(parsed, _decoder(parsed), raw) == "accepted"


# ------------------------------------------------------------------ compiling


def test_logical_types_fastavro_converts_do_not_compile() -> None:
    for pair in LOGICAL_READERS:
        kind, logical = pair.split("-", 1)
        schema: dict[str, Any] = {"type": kind, "logicalType": logical}
        if kind == "fixed":
            schema.update(name="Money", size=8)
        with pytest.raises(ValueError, match="fastavro converts it"):
            _decoder(schema)
    # One fastavro ignores is read as its type.
    schema = {"type": "long", "logicalType": "no-such-type"}
    assert _agree(schema, _decoder(schema), b"\x04") == "accepted"


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("{", "not JSON"),
        ('"Nowhere"', 'unknown type name "Nowhere"'),
        ('{"type": "record", "name": "R", "fields": [{"name": "a", "type": "B"}]}', 'unknown type name "B"'),
        ('{"type": "error", "name": "E", "fields": []}', 'type "error" is not supported'),
        ('{"type": "fixed", "name": "F", "size": -1}', "size is not a count"),
        ('{"type": "enum", "name": "E"}', "no list of symbols"),
        ('{"type": "array"}', 'without "items"'),
        ("[1]", "neither a name, a list nor an object"),
        (
            '[{"type": "enum", "name": "E", "symbols": ["A"]}, {"type": "enum", "name": "E", "symbols": ["B"]}]',
            "redefin",
        ),
    ],
)
def test_schemas_it_cannot_compile(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=f"cannot compile the Avro schema: .*{re.escape(why)}"):
        AvroDecoder(text)


# ------------------------------------------------------------------ errors, worded without the data


def _refused(schema: Any, raw: bytes) -> str:
    with pytest.raises(ValueError) as info:
        _decoder(schema).decode(raw)
    message = str(info.value)
    assert MARK.decode() not in message and "\\x" not in message and "b'" not in message
    return message


def test_truncation() -> None:
    assert _refused("string", b"\x40" + MARK) == "truncated: a string at byte 0 declares 32 bytes, 11 left"
    assert _refused("long", b"\x80\x80") == "truncated: a long at byte 0 runs past the end (2 bytes)"
    assert _refused("double", b"\x00\x00") == "truncated: a double at byte 0 needs 8 bytes, 2 left"
    assert _refused({"type": "fixed", "name": "F", "size": 16}, MARK) == (
        "truncated: a fixed at byte 0 needs 16 bytes, 11 left"
    )
    record = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "string"}, {"name": "b", "type": "int"}]}
    assert _refused(record, b"\x16" + MARK) == "truncated: an int at byte 12 runs past the end (12 bytes)"
    # A real message cut short.
    raw = next(case.raw() for case in cases() if case.id == "oms-avro/seed-insert")
    message = _refused(parsed_schema(), raw[:100])
    assert message.startswith("truncated: ") and "at byte " in message


def test_bad_union_and_enum_index() -> None:
    assert _refused(["null", "string"], b"\x04" + MARK) == "a union branch index at byte 0 is 2, outside 0..2"
    assert _refused(["null", "string"], b"\x01") == "a union branch index at byte 0 is -1, outside 0..2"
    enum = {"type": "enum", "name": "E", "symbols": ["A"]}
    assert _refused(enum, b"\x02") == "an enum symbol index at byte 0 is 1, outside 0..1"


def test_bad_utf8() -> None:
    raw = b"\x18" + MARK + b"\xff"
    assert _refused("string", raw) == "a string at byte 1 is not UTF-8 (invalid at byte 12)"
    assert _refused({"type": "map", "values": "null"}, b"\x02" + raw + b"\x00") == (
        "a map key at byte 2 is not UTF-8 (invalid at byte 13)"
    )


def test_huge_and_negative_lengths() -> None:
    huge = _zigzag(2**62)
    assert _refused("bytes", huge + MARK) == f"truncated: a bytes value at byte 0 declares {2**62} bytes, 11 left"
    assert _refused("string", b"\x01" + MARK) == "a string at byte 0 has a negative length (-1)"
    assert _refused({"type": "array", "items": "long"}, huge + MARK) == (
        f"truncated: a block of an array at byte 0 declares {2**62} items of at least 1 bytes, 11 left"
    )
    # Items of no bytes: the count alone is refused beyond a limit, nothing is allocated for it.
    assert _refused({"type": "array", "items": "null"}, huge) == (
        "an array at byte 0 holds more than 1048576 items of no bytes"
    )
    assert _decoder({"type": "array", "items": "null"}).decode(b"\x06\x00") == ([None, None, None], 2)


def test_varints_beyond_64_bits() -> None:
    assert _refused("long", b"\xff" * 10 + b"\x01") == "a long at byte 0 runs beyond 64 bits"
    assert _refused("long", b"\xff" * 9 + b"\x02") == "a long at byte 0 runs beyond 64 bits"
    assert _refused("string", b"\xff" * 11) == "the length of a string at byte 0 runs beyond 64 bits"
    assert _decoder("long").decode(b"\xfe" + b"\xff" * 8 + b"\x01") == (2**63 - 1, 10)
    # An int is read as a long, as fastavro reads it (no 32-bit check): golden drs-avro/dts-time-beyond-long.
    assert _agree("int", _decoder("int"), _zigzag(2**40)) == "accepted"


def test_boolean_bytes() -> None:
    assert _refused("boolean", b"\x02") == "a boolean at byte 0 is neither 0 nor 1"
    assert _decoder("boolean").decode(b"\x01") == (True, 1)


def _linked(depth: int) -> bytes:
    """A datum of ``L`` (a linked list) ``depth`` records deep."""
    return b"\x02" * (depth - 1) + b"\x00"


LINKED = {"type": "record", "name": "L", "fields": [{"name": "next", "type": ["null", "L"]}]}


def test_deep_nesting() -> None:
    decoder = _decoder(LINKED)
    assert _agree(fastavro.parse_schema(LINKED), decoder, _linked(100)) == "accepted"
    _, end = decoder.decode(_linked(512))
    assert end == 512
    assert _refused(LINKED, _linked(513)) == "values nest deeper than 512 levels at byte 512 (a recursive schema)"
    assert _refused(LINKED, _linked(100_000)).startswith("values nest deeper than 512 levels")
    nested_arrays = {"type": "record", "name": "A", "fields": [{"name": "a", "type": {"type": "array", "items": "A"}}]}
    assert _refused(nested_arrays, b"\x02" * 10_000).startswith("values nest deeper than 512 levels")


def test_floats() -> None:
    decoder = _decoder("float")
    for bits in (b"\x00\x00\xc0\x7f", b"\x00\x00\x80\x7f", b"\x00\x00\x00\x80", struct.pack("<f", 1.5)):
        assert _agree("float", decoder, bits) == "accepted"
