"""Envelopes read by the fast lane (``changelog.native_envelope``) are fastavro's, for good and broken bodies."""

from __future__ import annotations

import random

import pytest

from binlake.shared.codec import avro
from binlake.shared.event.model import Source
from binlake.spark_sink.changelog import arrow_rows, native_envelope
from binlake.spark_sink.layout import IMAGE_FIELDS
from tests.bench import sink_bench
from tests.support.changelog_events import ddl_event
from tests.support.fastlane_support import NEEDS_LANE

pytestmark = [pytest.mark.unit, NEEDS_LANE]


def _ddl(source: Source, ts_ms: int | None) -> bytes:
    return avro.encode(ddl_event(source, ts_ms))


def _values() -> list[bytes]:
    values = [item.value for item in sink_bench.generate(300, seed=5)]
    values.append(_ddl(Source("oms", "oceanbase", "db", "sch", "t", tenant="ten", binlog_pos=2**62), None))
    values.append(_ddl(Source("oms", "oceanbase", None, None, None), -86_400_001))
    return values


def test_the_native_reader_is_used_and_reads_what_fastavro_reads() -> None:
    values = _values()
    reader = native_envelope.for_schema(avro.schema_json(), IMAGE_FIELDS)
    assert reader is not None
    native = reader.read(values, arrow_rows.HEADER)
    assert None not in native  # none declined: each one read natively
    assert native == [arrow_rows.decode_envelope(v) for v in values]
    assert arrow_rows.envelopes(values) == native
    # Bodies of an older writer schema are fastavro's to resolve against the current one.
    assert arrow_rows._native_envelopes(bytes(8)) is None


def test_broken_bodies_get_fastavros_answer_whichever_reader_reads_them() -> None:
    rng = random.Random(17)
    originals = _values()[:40] + _values()[-2:]
    broken: list[bytes] = []
    for _ in range(3000):
        value = bytearray(rng.choice(originals))
        if rng.random() < 0.3:
            del value[rng.randrange(arrow_rows.HEADER, len(value)) :]  # truncated
        else:
            for _ in range(rng.randint(1, 3)):  # a few bytes of the body changed
                value[rng.randrange(arrow_rows.HEADER, len(value))] = rng.randrange(256)
        broken.append(bytes(value))
    assert arrow_rows.envelopes(broken) == [arrow_rows.decode_envelope(v) for v in broken]


def test_what_fastavro_reads_its_own_way_is_declined() -> None:
    from binlake.shared.fastlane._native import AvroShape

    # A kept string that is not UTF-8, a boolean byte other than 0/1, a union index out of range, an enum
    # index beyond its symbols, a negative block count: None (the caller asks fastavro).
    assert AvroShape("<S>").read_many([b"\x02\xff"], 0) == [None]
    assert AvroShape("<Z>").read_many([b"\x02"], 0) == [None]
    assert AvroShape("<(N,L)>").read_many([b"\x04"], 0) == [None]
    assert AvroShape("<E2;>").read_many([b"\x04"], 0) == [None]
    assert AvroShape("<[L>").read_many([b"\x01\x02\x02\x00"], 0) == [None]
    # Blocks asking for more than 2**20 items in all (of nulls: no bytes each), as a corrupt count.
    many = b"\x80\x80\x40" * 3 + b"\x00"  # three blocks of 2**19 nulls
    assert AvroShape("<[N>").read_many([many], 0) == [None]
    assert AvroShape("<[N>").read_many([b"\x80\x80\x40\x00"], 0) == [([None] * 2**19,)]
    # A skipped string is not checked (nor is it by fastavro's skipping); kept values as fastavro gives them.
    assert AvroShape("<!S,L,E3;,{D,[B>").read_many(
        [b"\x02\xff\x07\x04\x02\x02k" + bytes(8) + b"\x00\x02\x02z\x00"], 0
    ) == [(None, -4, 2, {"k": 0.0}, [b"z"])]
    with pytest.raises(ValueError, match="not a shape notation"):
        AvroShape("<X>")


def test_a_schema_without_a_notation_is_left_to_fastavro() -> None:
    fixed = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "f", "type": {"type": "fixed", "name": "F", "size": 2}}],
    }
    assert native_envelope.for_schema(fixed, frozenset()) is None
    logical = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}}],
    }
    assert native_envelope.for_schema(logical, frozenset()) is None
    empty = {"type": "record", "name": "R", "fields": []}
    assert native_envelope.for_schema(empty, frozenset()) is None
