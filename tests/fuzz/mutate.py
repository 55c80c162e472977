"""Structure-aware mutation of vendor messages: JSON trees and Avro records, plus raw bytes.

Flipping bytes of a JSON message mostly breaks the JSON, and the parser stops
at its first line; the converters, the envelope rules and the fast lanes are
reached by messages that still parse. So most mutations here decode the
message (JSON with every number's text and every repeated key kept; Avro with
the format's schema), change one to three nodes (a value for an edge text of
the converters, another JSON type, a value spliced from another seed, a key
dropped, renamed or repeated, an item duplicated) and encode it again. The
rest are byte mutations: libFuzzer's own (``atheris.Mutate``) under atheris,
a few simple ones without it.
"""

from __future__ import annotations

import copy
import io
import json
import random
from collections.abc import Callable
from functools import cache
from typing import Any

import fastavro

from tests.fuzz.seeds import Target

ByteMutator = Callable[[bytes, int, random.Random], bytes]

EDGE_TEXTS: tuple[str, ...] = (
    "", " ", "0", "-0", "00", "01", "1", "-1", "+1", "1.", ".5", "-.5", "1.0", "-0.0", "1e3", "1E+2", "1e-400",
    "1e400", "-1e400", "NaN", "nan", "Infinity", "-Infinity", "inf", "0x10", " 1", "1 ", "1_000", "１",
    "١٢", "²", "--1", "-²", "127",
    "128", "-129", "255", "256", "32767", "32768", "2147483647", "2147483648", "-2147483649", "9223372036854775807",
    "9223372036854775808", "-9223372036854775808", "-9223372036854775809", "18446744073709551615",
    "18446744073709551616", "9" * 38, "9" * 39, "1" + "0" * 40, "0." + "0" * 40 + "1", "1" * 41 + ".5",
    "12345678901234567890.123456789012345678901234567890", "0000-00-00", "0000-00-00 00:00:00", "2024-02-29",
    "2023-02-29", "2024-13-01", "2024-00-10", "0001-01-01", "9999-12-31", "10000-01-01", "2024-1-5",
    "2024-03-10 02:30:00", "2024-11-03 01:30:00", "2024-03-31 02:30:00", "2024-01-01 00:00:00.123456",
    "2024-01-01 00:00:00.1234567", "2024-01-01T00:00:00", "2024-01-01T00:00:00Z", "2024-01-01T00:00:00+08:00",
    "2024-01-01 00:00:00 +0800", "2024-01-01 24:00:00", "1970-01-01 00:00:00", "1969-12-31 23:59:59.999999",
    "9999-12-31 23:59:59.999999", "00:00:00", "23:59:59", "24:00:00", "838:59:59", "-838:59:59.000001", "839:00:00",
    "12:60:00", "1:2:3", "12:00:00.999999999", "20240101120000", "20241301000000", "2024010112000", "1700000000",
    "1700000000.123456789", "99999999999.999999999", "-1700000000", "true", "false", "TRUE", "True", "null", "NULL",
    "[]", "[106, -1]", "[106,-1]", "[256]", "[-129]", "[ 1]", "[01]", "{}", "AA==", "AA=", "=", "A", "////", "_-_-",
    "aGk=", "\x00", "\ud800", "\udfff", "😀", "é", "ÿ", "Ā", "\u2028", "a\nb", "\\", '"', "'", "int", "int(11)",
    "int unsigned", "bigint unsigned", "bigint(20) unsigned zerofill", "tinyint(1)", "bit(1)", "bit(64)",
    "decimal(65,30)", "decimal(0,0)", "decimal(99999999999,2)", "decimal(10,4294967296)", "decimal(10,2)",
    "decimal", "numeric(38,-1)", "float", "double", "varchar(255)", "char(0)", "text", "longblob", "binary(16)",
    "varbinary", "blob", "json", "enum('a','b')", "set('a','b')", "geometry", "point", "date", "time(6)",
    "datetime(3)", "timestamp", "timestamp(6)", "year", "year(4)", "boolean", "unknown type", "VARCHAR2",
    "NUMBER(38,0)", "TIMESTAMP(6) WITH TIME ZONE", "CLOB", "INSERT", "UPDATE", "DELETE", "INIT", "DDL", "TRUNCATE",
    "HEARTBEAT", "BEGIN", "COMMIT", "insert", "i", "u", "d", "c", "r", "t", "I", "U", "D", "T", "ins", "upd", "del",
    "bootstrap-insert", "INIT_DDL", "ROW", "QUERY", "mysql-bin.000001", "mysql-bin.",
    "binlog.999999999999999999999", "0@0", "1@2", "@", "a.b", "a.b.c", "a.b.c.d", ".", "..", "db.", ".t",
    "OB_MYSQL", "MySQL", "Oracle", "ORACLE", "PostgreSQL", "DB2", "utf8mb4", "latin1", "binary", "a" * 300,
    "Z" * 5000,
)  # fmt: skip
"""Texts at the edges of the converters, the envelope fields and the type maps."""

EDGE_NUMBERS: tuple[str, ...] = (
    "0", "-0", "1", "-1", "0.0", "-0.0", "1.5", "1e3", "1E-7", "1e308", "1e309", "-1e309", "5e-324", "1e-400",
    "127", "128", "255", "256", "65536", "2147483647", "2147483648", "-2147483649", "4294967296",
    "9007199254740993", "9223372036854775807", "9223372036854775808", "-9223372036854775808",
    "-9223372036854775809", "18446744073709551615", "18446744073709551616", "9" * 38, "9" * 40, "1" + "0" * 400,
    "0." + "0" * 30 + "1", "123456789.123456789123456789", "1700000000000", "253402300800000", "-62135596800001",
    "1700000000", "86400000000", "3020399999999",
)  # fmt: skip
"""JSON number texts at the edges of the integer, decimal, float and time ranges."""

EDGE_INTS: tuple[int, ...] = tuple(int(t) for t in EDGE_NUMBERS if t.lstrip("-").isdigit() and len(t) < 40)
"""The integer edges, for Avro ints and longs (a value beyond the field's range fails to encode: bytes then)."""

INSERT_CHARS = ' 0123456789.-+:eE,TZ\x00é\u00ff\u0100\ud800\n"\\²١'


class Num(str):
    """A JSON number, kept as its text so re-encoding changes nothing but what a mutation changed."""


class Obj(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, in order, repeated keys kept."""


_OTHERS: tuple[Any, ...] = (None, True, False, Obj(), [], Obj([("a", None)]), [None], [Num("1")], [""], "x")
"""Values of every JSON type, for a node replaced by another type."""


def loads(text: bytes) -> Any:
    return json.loads(text, object_pairs_hook=Obj, parse_int=Num, parse_float=Num, parse_constant=Num)


def dumps(node: Any, ascii_only: bool) -> str:
    if isinstance(node, Obj):
        return "{" + ",".join(f"{json.dumps(k, ensure_ascii=ascii_only)}:{dumps(v, ascii_only)}" for k, v in node) + "}"
    if isinstance(node, list):
        return "[" + ",".join(dumps(v, ascii_only) for v in node) + "]"
    if isinstance(node, Num):
        return str(node)
    return json.dumps(node, ensure_ascii=ascii_only)


def _slots(node: Any, out: list[tuple[Any, int]]) -> None:
    """Every (container, index) under ``node``: the places a mutation can change."""
    if isinstance(node, Obj):
        for i, (_, value) in enumerate(node):
            out.append((node, i))
            _slots(value, out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.append((node, i))
            _slots(value, out)


def _get(container: Any, i: int) -> Any:
    return container[i][1] if isinstance(container, Obj) else container[i]


def _set(container: Any, i: int, value: Any) -> None:
    if isinstance(container, Obj):
        container[i] = (container[i][0], value)
    else:
        container[i] = value


def _tweak_text(text: str, rng: random.Random) -> str:
    choice = rng.randrange(7)
    pos = rng.randint(0, len(text))
    if choice == 0:
        return text[:pos] + rng.choice(INSERT_CHARS) + text[pos:]
    if choice == 1 and text:
        return text[:pos] + text[pos + 1 :]
    if choice == 2:
        return text[:pos]
    if choice == 3:
        return text.swapcase()
    if choice == 4:
        digits = [i for i, c in enumerate(text) if c.isdigit()]
        if digits:
            i = rng.choice(digits)
            return text[:i] + str((int(text[i]) + rng.choice((1, 9))) % 10) + text[i + 1 :]
    if choice == 5:
        return text + text[pos:]
    return rng.choice(("-", " ", "+", "0")) + text if rng.random() < 0.5 else text + rng.choice((" ", "0", ".0", "Z"))


class Mutator:
    """Mutations for one format's inputs, with that format's seeds to splice from."""

    def __init__(self, target: Target, byte_mutate: ByteMutator | None = None) -> None:
        self.target = target
        self.byte_mutate = byte_mutate or simple_byte_mutate
        self.docs: list[Any] = []
        self.keys: set[str] = set()
        self.leaves: list[Any] = []
        for seed in target.seeds:
            try:
                doc = loads(seed[1:])
            except ValueError:
                continue
            self.docs.append(doc)
            slots: list[tuple[Any, int]] = []
            _slots(doc, slots)
            for container, i in slots:
                if isinstance(container, Obj):
                    self.keys.add(container[i][0])
                self.leaves.append(_get(container, i))
        self.key_list = sorted(self.keys)

    def __call__(self, data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if not data:
            data = rng.choice(self.target.seeds)
        roll = rng.random()
        if roll < 0.03:
            return bytes([rng.randrange(len(self.target.settings))]) + data[1:]
        if roll < 0.06:  # start again from a seed: the corpus may have drifted far from any real message
            return rng.choice(self.target.seeds)
        if roll < 0.4:
            return self.byte_mutate(data, max_size, rng)
        try:
            out = self.structured(data, rng)
        except Exception:  # noqa: BLE001 - a mutation that cannot apply (a harness limit): bytes instead
            out = None
        if out is None or len(out) > max_size:
            return self.byte_mutate(data, max_size, rng)
        return out

    def structured(self, data: bytes, rng: random.Random) -> bytes | None:
        index, raw = self.target.split(data)
        head = raw.lstrip()[:1]
        if head in (b"{", b"[", b'"') or head.isdigit():
            try:
                doc = loads(raw)
            except (ValueError, RecursionError):
                return None
            for _ in range(rng.choice((1, 1, 1, 2, 3))):
                doc = self.mutate_json(doc, rng)
            try:
                text = dumps(doc, ascii_only=rng.random() < 0.3)
            except RecursionError:
                return None
            return data[:1] + text.encode("utf-8", "surrogatepass")
        schema = avro_schema(self.target, index)
        if schema is None:
            return None
        return mutate_avro(data[:1], raw, schema, rng)

    def value(self, rng: random.Random, like: Any = None) -> Any:
        """A replacement value: an edge text or number, another JSON type, or a seed's value."""
        roll = rng.random()
        if isinstance(like, str) and not isinstance(like, Num) and roll < 0.45:
            return _tweak_text(like, rng) if roll < 0.2 else rng.choice(EDGE_TEXTS)
        if isinstance(like, Num) and roll < 0.45:
            return Num(rng.choice(EDGE_NUMBERS)) if roll < 0.3 else Num(_number_tweak(str(like), rng))
        if roll < 0.6 and self.leaves:
            return copy.deepcopy(rng.choice(self.leaves))
        if roll < 0.75:
            return rng.choice(EDGE_TEXTS)
        if roll < 0.85:
            return Num(rng.choice(EDGE_NUMBERS))
        return copy.deepcopy(rng.choice(_OTHERS))

    def mutate_json(self, doc: Any, rng: random.Random) -> Any:
        slots: list[tuple[Any, int]] = []
        _slots(doc, slots)
        if not slots:
            return self.value(rng, doc)
        container, i = rng.choice(slots)
        current = _get(container, i)
        op = rng.randrange(10)
        if op <= 3:
            _set(container, i, self.value(rng, current))
        elif op == 4:  # drop
            del container[i]
        elif op == 5:  # repeat: the same key again (with another value), or the item twice
            copy = (container[i][0], self.value(rng, current)) if isinstance(container, Obj) else current
            container.insert(i + rng.randint(0, 1), copy)
        elif op == 6 and isinstance(container, Obj):  # rename
            key = container[i][0]
            new = rng.choice(self.key_list) if self.key_list and rng.random() < 0.5 else _tweak_text(key, rng)
            container[i] = (new, current)
        elif op == 7 and isinstance(container, Obj):  # add a key the format knows
            key = rng.choice(self.key_list) if self.key_list else "x"
            container.insert(rng.randint(0, len(container)), (key, self.value(rng)))
        elif op == 8:  # wrap or unwrap
            if isinstance(current, list) and current:
                _set(container, i, current[0] if not isinstance(current, Obj) else current[0][1])
            else:
                _set(container, i, [current] if rng.random() < 0.5 else Obj([("v", current)]))
        else:  # splice the same key's value from another seed
            donor = self._donor(container[i][0], rng) if isinstance(container, Obj) else None
            _set(container, i, donor if donor is not None else self.value(rng, current))
        return doc

    def _donor(self, key: str, rng: random.Random) -> Any:
        if not self.docs:
            return None
        doc = rng.choice(self.docs)
        slots: list[tuple[Any, int]] = []
        _slots(doc, slots)
        found = [_get(c, i) for c, i in slots if isinstance(c, Obj) and c[i][0] == key]
        return copy.deepcopy(rng.choice(found)) if found else None


def _number_tweak(text: str, rng: random.Random) -> str:
    choice = rng.randrange(6)
    if choice == 0:
        return text[1:] if text.startswith("-") else "-" + text
    if choice == 1:
        return text + "0"
    if choice == 2:
        return text + ".0" if "." not in text else text + "1"
    if choice == 3:
        return text + "e" + str(rng.choice((1, 2, 20, 300, -300)))
    if choice == 4 and len(text) > 1:
        return text[:-1]
    return str(int(text) + rng.choice((1, -1))) if text.lstrip("-").isdigit() else text


def simple_byte_mutate(data: bytes, max_size: int, rng: random.Random) -> bytes:
    """Byte mutations for runs without libFuzzer: flip, insert, delete, repeat, cut."""
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        choice = rng.randrange(5)
        pos = rng.randint(1, max(1, len(out)))
        if choice == 0 and len(out) > 1:
            out[rng.randrange(1, len(out))] = rng.randrange(256)
        elif choice == 1:
            out[pos:pos] = bytes([rng.choice(b'0 -."{}[],:\\\xff\x80\xc3')])
        elif choice == 2:
            del out[pos : pos + rng.randint(1, 8)]
        elif choice == 3:
            out[pos:pos] = out[pos : pos + rng.randint(1, 16)]
        else:
            del out[pos:]
    return bytes(out[:max_size])


# ------------------------------------------------------------------ Avro


@cache
def _parsed(schema_text: str) -> Any:
    return fastavro.parse_schema(json.loads(schema_text))


def avro_schema(target: Target, index: int) -> Any:
    """The writer schema of binary messages under context ``index``, or None."""
    if target.format_id in ("oms-avro", "auto"):
        from binlake.services.oms_avro.parser import parsed_schema

        return parsed_schema()
    schema = target.settings[index].options.get("avro_schema")
    if schema is None:
        return None
    try:
        return _parsed(json.dumps(schema, sort_keys=True))
    except Exception:  # noqa: BLE001 - a broken schema in a context: no structured mutation
        return None


def _avro_slots(node: Any, out: list[tuple[Any, Any]]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            out.append((node, key))
            _avro_slots(value, out)
    elif isinstance(node, list):
        for i, value in enumerate(node):
            out.append((node, i))
            _avro_slots(value, out)
    elif isinstance(node, tuple) and len(node) == 2:  # (record name, record) in a union
        _avro_slots(node[1], out)


def _is_branch(node: Any) -> bool:
    """A named union branch as fastavro reads it with ``return_record_name``: (type name, value)."""
    return isinstance(node, tuple) and len(node) == 2 and isinstance(node[0], str)


def _avro_value(current: Any, rng: random.Random) -> Any:
    """A value of the same Avro type as ``current`` (another type would not encode)."""
    if isinstance(current, bool):
        return not current
    if isinstance(current, int):
        return rng.choice(EDGE_INTS) if rng.random() < 0.6 else current + rng.choice((1, -1, 10**6))
    if isinstance(current, float):
        return rng.choice((0.0, -0.0, 1.5, 1e308, float("inf"), float("nan"), 5e-324, -1e-7))
    if isinstance(current, str):
        return _tweak_text(current, rng) if rng.random() < 0.4 else rng.choice(EDGE_TEXTS)
    if isinstance(current, bytes):
        return rng.choice((b"", b"\x00", b"\xff" * 3, current + b"\x80", current[:-1], "é".encode()))
    return current


def mutate_avro(head: bytes, raw: bytes, schema: Any, rng: random.Random) -> bytes | None:
    """Decode ``raw`` with ``schema``, change one or two values keeping their types, encode again
    (bytes after the record, such as OMS's trailing ``bornTimestamp``, are kept)."""
    stream = io.BytesIO(raw)
    try:
        record = fastavro.schemaless_reader(stream, schema, None, return_record_name=True)
    except Exception:  # noqa: BLE001 - not a record of this schema: byte mutation instead
        return None
    tail = raw[stream.tell() :]
    for _ in range(rng.choice((1, 1, 2))):
        slots: list[tuple[Any, Any]] = []
        _avro_slots(record, slots)
        if not slots:
            return None
        container, key = rng.choice(slots)
        current = container[key]
        roll = rng.random()
        branches = [container[k] for container, k in slots if _is_branch(container[k])]
        if _is_branch(current) and branches and roll < 0.3:  # another branch of the union: a value of another kind
            container[key] = copy.deepcopy(rng.choice(branches))
        elif isinstance(container, list) and roll < 0.4:
            if roll < 0.35:
                del container[key]
            else:
                container.insert(key, current)
        elif isinstance(container, dict) and roll < 0.1 and container is not record:
            container[_tweak_text(str(key), rng)] = current  # a map's new key (a record's fails to encode)
        else:
            container[key] = _avro_value(current, rng)
    out = io.BytesIO()
    try:
        fastavro.schemaless_writer(out, schema, record)
    except Exception:  # noqa: BLE001 - the change does not fit the schema: byte mutation instead
        return None
    return head + out.getvalue() + tail
