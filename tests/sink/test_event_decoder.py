"""The sink's event decoder (``io.binlake.spark.EventDecoder``, SQL ``binlake_decode_event``) in a real session.

Every event the golden corpus' messages normalize to, plus a DDL event, is encoded as the normalizer encodes
it and decoded by Spark; the row must equal what fastavro (the normalizer's own Avro library) reads from the
same bytes, in the struct shape the sink's SQL reads (``events.decoder``). Bytes that are not such an event
decode to NULL, which the sink quarantines as "corrupt Avro body".
"""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from binlake.shared.codec import avro
from binlake.shared.event.model import Source
from binlake.shared.parsing import registry
from binlake.shared.parsing.result import Parsed
from binlake.spark_sink.events import decoder
from binlake.spark_sink.events.source import REASON, decode
from tests.corpus_cases import cases
from tests.support.changelog_events import ddl_event
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

MEMBERS = [f.name for f in decoder.event_type()["before"].dataType.valueType.fields]  # type: ignore[attr-defined]


def corpus_messages() -> list[bytes]:
    """The corpus' events (every format, every value kind it has) as single-object Avro, and a DDL event."""
    out = [avro.encode(ddl_event(Source("canal-json", "mysql", "d", None, "t", binlog_pos=4), 1_700_000_000_000))]
    for case in cases():
        outcome = registry.get(case.format_id)(case.raw(), case.context().at("vendor", 3, 41))
        if isinstance(outcome, Parsed):
            out += [avro.encode(event) for event in outcome.events]
    return out


def _value(value: Any) -> dict[str, Any] | None:
    """A value union as fastavro reads it (records as (name, fields)) in the decoder's member struct."""
    if value is None:
        return None
    members: dict[str, Any] = dict.fromkeys(MEMBERS)
    if isinstance(value, tuple):
        name, fields = value
        members[f"member_{name.rsplit('.', 1)[-1]}"] = fields
    else:
        kind = {bool: "boolean", int: "long", float: "double", str: "string", bytes: "bytes"}[type(value)]
        members[f"member_{kind}"] = value
    return members


def expected(message: bytes, fields: set[str] | None = None) -> dict[str, Any]:
    """What fastavro reads of ``message``, shaped as the decoder's row; fields not in ``fields`` None."""
    record = fastavro.schemaless_reader(
        io.BytesIO(message[10:]), avro.parsed_schema(), return_record_name=True, return_record_name_override=True
    )
    assert isinstance(record, dict)
    for image in ("before", "after"):
        if record[image] is not None:
            record[image] = {name: _value(v) for name, v in record[image].items()}
    return {name: (record[name] if fields is None or name in fields else None) for name in decoder.event_fields()}


def _decoded(spark: SparkSession, messages: list[bytes], fields: set[str] | None = None) -> list[Any]:
    frame = spark.createDataFrame([(i, m) for i, m in enumerate(messages)], "i int, value binary")
    rows = frame.select("i", decoder.decoded("value", fields).alias("e")).orderBy("i").collect()
    return [None if row["e"] is None else row["e"].asDict(recursive=True) for row in rows]


def test_every_corpus_event_decodes_as_fastavro_reads_it(spark: SparkSession) -> None:
    messages = corpus_messages()
    assert len(messages) > 200
    kinds = {m for message in messages for m in _members_used(message)}
    assert kinds == set(MEMBERS), f"the corpus lacks value kinds {set(MEMBERS) - kinds}"
    for message, got in zip(messages, _decoded(spark, messages), strict=True):
        assert got == expected(message)


def _members_used(message: bytes) -> set[str]:
    row = expected(message)
    return {
        member
        for image in (row["before"], row["after"])
        for value in (image or {}).values()
        for member, held in (value or {}).items()
        if held is not None
    }


def test_only_the_fields_asked_for_are_built(spark: SparkSession) -> None:
    messages = corpus_messages()[:50]
    for fields in ({"before", "after"}, {"columns"}, {"op", "origin", "order_key"}):
        for message, got in zip(messages, _decoded(spark, messages, fields), strict=True):
            assert got == expected(message, fields)


def test_bytes_that_are_no_event_decode_to_null_and_are_quarantined(spark: SparkSession) -> None:
    good = corpus_messages()[1]
    order_key = expected(good)["order_key"].encode()
    at = good.index(order_key)
    broken = {
        "truncated": good[:-1],
        "a byte after the event": good + b"\x00",
        "another fingerprint": good[:2] + bytes(8) + good[10:],
        "no header": good[10:],
        "op symbol 9 of 7": good[:10] + b"\x12" + good[11:],
        "text that is not UTF-8": good[:at] + b"\xff" + good[at + 1 :],
        "empty": b"",
    }
    assert all(row is None for row in _decoded(spark, list(broken.values())))
    raw = spark.createDataFrame(
        [(None, m, "t", 0, i, None, 0) for i, m in enumerate([good, *broken.values()])],
        "key binary, value binary, topic string, partition int, offset long, timestamp timestamp, timestampType int",
    )
    reasons = [row[REASON] for row in decode(raw).orderBy("_kafka_offset").collect()]
    assert reasons[0] is None
    assert reasons[1:3] == ["corrupt Avro body"] * 2
    assert reasons[3].startswith("unknown schema fingerprint")
    assert reasons[4] == "no Avro single-object marker C3 01"
    assert reasons[5:7] == ["corrupt Avro body"] * 2
    assert reasons[7] == "shorter than the single-object header"


def test_the_decoder_reads_the_released_schema_and_no_other(spark: SparkSession) -> None:
    """A new schema version needs a reader in EventDecoder.java before it is released: this fails until then."""
    gateway: Any = spark.sparkContext._jvm
    java = getattr(gateway, decoder.DECODER_CLASS)
    assert avro.released_versions() == [1]
    assert bytes(java.header()) == avro.MAGIC + avro.fingerprint(1)
    assert list(java.fields()) == decoder.event_fields() == [f["name"] for f in avro.schema_json()["fields"]]


def test_the_descriptor_id_tells_descriptors_apart_by_their_bytes(spark: SparkSession) -> None:
    """``binlake_event_descriptor``: equal ``primary_key`` and ``columns``, equal ids; different, different."""
    messages = corpus_messages()
    frame = spark.createDataFrame([(i, m) for i, m in enumerate(messages)], "i int, value binary")
    ids = [row["d"] for row in frame.select("i", decoder.descriptor_id("value").alias("d")).orderBy("i").collect()]
    assert None not in ids
    described = [repr((expected(m)["primary_key"], expected(m)["columns"])) for m in messages]
    assert len(set(described)) > 20
    assert len(set(zip(ids, described, strict=True))) == len(set(ids)) == len(set(described))
    broken = [b"", messages[1][:15], messages[1][:2] + bytes(8) + messages[1][10:]]
    frame = spark.createDataFrame([(m,) for m in broken], "value binary")
    assert [row[0] for row in frame.select(decoder.descriptor_id("value")).collect()] == [None] * 3


SIDES = ("before", "after")


NAME = "concat(CAST(length(encode(k, 'UTF-16LE')) DIV 2 AS STRING), ':', k)"
"""A column name ``k`` as ``binlake_image_key`` reads names (``fold.names_text``)."""


def _values(side: str, image: str) -> str:
    """Image ``image``'s value of each column of ``e.<side>``, found by ``binlake_image_key`` and decoded."""
    value = f"{decoder.VALUE_FUNCTION}({decoder.IMAGE_KEY_FUNCTION}({image}, {NAME})[0])"
    return f"map_from_arrays(map_keys(e.{side}), transform(map_keys(e.{side}), k -> {value}))"


def test_images_as_bytes_hold_the_events_values_and_encode_back(spark: SparkSession) -> None:
    """``binlake_event_images`` (the fold's input) holds each image as the event's bytes: each column's value
    found there (``binlake_image_key``) and decoded (``binlake_decode_value``) is the decoder's value, and a
    version-1 changelog's decoded image encodes back to the same bytes (``binlake_image_bytes``); every value
    kind of the corpus (the encoded image in the order of the decoded map's entries, which Spark keeps only for
    small maps: the same values, not always the same bytes)."""
    messages = corpus_messages()
    frame = spark.createDataFrame([(i, m) for i, m in enumerate(messages)], "i int, value binary")
    images = frame.select(
        "i",
        decoder.decoded("value", {"before", "after"}).alias("e"),
        F.call_function(decoder.IMAGES_FUNCTION, "value").alias("b"),
    )
    # Maps do not compare in SQL: each side's map brought back and compared here.
    checks = images.selectExpr(
        "i",
        "e",
        "b",
        *[f"{_values(side, f'b.{side}')} AS {side}_decoded" for side in SIDES],
        *[f"{_values(side, f'{decoder.IMAGE_BYTES_FUNCTION}(e.{side})')} AS {side}_encoded" for side in SIDES],
        f"{decoder.IMAGE_KEY_FUNCTION}(b.after, '7:missing')[0] AS missing",
    ).orderBy("i")
    rows = checks.collect()
    assert len(rows) == len(messages)
    for row in rows:
        for side in SIDES:
            assert row[f"{side}_decoded"] == row["e"][side], (row["i"], side)
            assert row[f"{side}_encoded"] == row["e"][side], (row["i"], side)
        assert row["missing"] is None
    null = f"{decoder.IMAGE_KEY_FUNCTION}(b.after, {NAME})[0] = X'00'"
    nulls = images.selectExpr(f"exists(map_keys(e.after), k -> {null}) AS n").where("n").count()
    assert nulls > 0, "the corpus has SQL NULL values: each is the union's null branch, one byte 00"


def test_a_key_is_found_by_name_and_a_column_listed_twice_has_its_last_value(spark: SparkSession) -> None:
    """``binlake_image_key``: the key columns' value bytes in the key's order, NULL for a column the image
    lacks, the last value of a column an image lists twice; names beyond ASCII."""
    one, two, three = b"\x04\x02", b"\x04\x04", b"\x04\x06"  # the value union's long 1, 2, 3
    # One block of three entries (zigzag 3 = 6): a = 1, \u00e9 = 2, a = 3; then the end (0).
    image = b"\x06" + b"\x02a" + one + b"\x04" + "\u00e9".encode() + two + b"\x02a" + three + b"\x00"
    frame = spark.createDataFrame([(image,)], "image binary")
    key = f"{decoder.IMAGE_KEY_FUNCTION}(image, '1:\u00e91:a1:z')"
    row = frame.selectExpr(f"{key} AS k").first()
    assert row is not None
    assert row["k"] == [two, three, None]
