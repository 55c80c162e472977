"""The mirror batch's fold of one key (``io.binlake.spark.KeyFold``, SQL ``binlake_fold_key``) in a real session.

The whole fold is checked by the batching property test (``test_sink_batching``); these cases pin its own
rules: newest value per column, partial images, DELETEs, routes to fallback columns per descriptor, names
beyond ASCII, sequences compared as Spark compares strings, the same fold however the events are split, and
a hot key folded where it is read.
"""

from __future__ import annotations

from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, LongType, MapType, StringType, StructField, StructType

from binlake.spark_sink.events import decoder
from binlake.spark_sink.mirror.fold import routes_text
from binlake.spark_sink.mirror.typemap import sql_string
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]

VALUE = decoder.event_type()["after"].dataType.valueType  # type: ignore[attr-defined]
EVENT = StructType(
    [
        StructField("seq", StringType()),
        StructField("del", BooleanType()),
        StructField("desc", LongType()),
        StructField("image", MapType(StringType(), VALUE)),
    ]
)


BYTES = f"{decoder.IMAGE_BYTES_FUNCTION}(image)"
"""The images as the fold reads them: as an event's bytes hold them."""


def long(value: int) -> dict[str, Any]:
    members: dict[str, Any] = dict.fromkeys(VALUE.fieldNames())
    members["member_long"] = value
    return members


def text(value: str) -> dict[str, Any]:
    members: dict[str, Any] = dict.fromkeys(VALUE.fieldNames())
    members["member_string"] = value
    return members


def fold(
    spark: SparkSession, events: list[tuple[Any, ...]], routes: list[tuple[int, str, str, bool]], *, parts: int = 1
) -> Any:
    """``binlake_fold_key`` of ``events`` (seq, del, desc, image) under ``routes`` (desc, logical, phys, routed),
    read as ``parts`` partitions (each folds its events, then the folds merge)."""
    frame = (
        spark.createDataFrame(events, EVENT).repartition(parts).selectExpr("seq", "del", "desc", f"{BYTES} AS image")
    )
    text_of = routes_text(routes)
    call = f"{decoder.FOLD_FUNCTION}(seq, del, desc, image, CAST(NULL AS STRING), {sql_string(text_of)}) AS f"
    values = f"transform_values(f.columns, (k, c) -> struct({decoder.VALUE_FUNCTION}(c.v) AS v, c.o AS o))"
    row = (
        frame.selectExpr(call)
        .selectExpr(f"struct(f.newest, f.deletes, f.last_delete, {values} AS columns) AS f")
        .first()
    )
    assert row is not None
    result = row["f"]
    columns = {name: (_plain(cell["v"]), cell["o"]) for name, cell in (result["columns"] or {}).items()}
    return result["newest"], result["deletes"], result["last_delete"], columns


def _plain(value: Any) -> Any:
    if value is None:
        return None
    return value["member_long"] if value["member_long"] is not None else value["member_string"]


SAME = [(0, "id", "id", True), (0, "a", "a", True), (0, "b", "b", True)]


def test_each_column_takes_its_newest_known_value(spark: SparkSession) -> None:
    events = [
        ("2", False, 0, {"id": long(1), "a": long(20)}),  # partial: b unknown here
        ("1", False, 0, {"id": long(1), "a": long(10), "b": text("x")}),
        ("3", False, 0, {"id": long(1), "b": None}),  # b known, NULL
        (None, True, 0, {"id": long(1)}),  # no sequence: counts for nothing
    ]
    newest, deletes, last_delete, columns = fold(spark, events, SAME)
    assert (newest, deletes, last_delete) == ("3", False, None)
    assert columns == {"id": (1, "3"), "a": (20, "2"), "b": (None, "3")}


def test_deletes_are_tracked_apart_from_the_newest_event(spark: SparkSession) -> None:
    events = [
        ("1", False, 0, {"id": long(1), "a": long(10)}),
        ("2", True, 0, {"id": long(1), "a": long(10)}),
        ("3", False, 0, {"id": long(1), "a": long(30)}),
    ]
    assert fold(spark, events, SAME)[:3] == ("3", False, "2")
    assert fold(spark, events[:2], SAME)[:3] == ("2", True, "2")


def test_routes_fill_the_routed_column_and_empty_the_others(spark: SparkSession) -> None:
    # Descriptor 7 types ``a`` as text: it goes to the fallback column, and empties ``a`` at its sequence.
    routes = [
        (5, "id", "id", True),
        (5, "a", "a", True),
        (5, "a", "a__string", False),
        (7, "id", "id", True),
        (7, "a", "a", False),
        (7, "a", "a__string", True),
    ]
    events = [("1", False, 5, {"id": long(1), "a": long(10)}), ("2", False, 7, {"id": long(1), "a": text("ten")})]
    columns = fold(spark, events, routes)[3]
    assert columns == {"id": (1, "2"), "a": (None, "2"), "a__string": ("ten", "2")}
    assert fold(spark, [*events, ("3", False, 9, {"a": long(3)})], routes)[3] == columns  # unrouted descriptor


def test_names_beyond_ascii_and_sequences_in_utf8_order(spark: SparkSession) -> None:
    name = "wert\U0001f600ä"
    routes = [(0, name, name, True), (0, "it's", "it's", True)]
    # U+1F600 is above U+FFFD in UTF-8 (and code point) order, below it in UTF-16 units.
    events = [("k\U0001f600", False, 0, {name: long(1)}), ("k\ufffd", False, 0, {name: long(2), "it's": long(5)})]
    newest, _, _, columns = fold(spark, events, routes)
    assert newest == "k\U0001f600"
    assert columns == {name: (1, "k\U0001f600"), "it's": (5, "k\ufffd")}


def test_the_fold_does_not_depend_on_how_events_are_split(spark: SparkSession) -> None:
    events = [
        (f"{n:04d}", n % 7 == 0, 0, {"id": long(1), "a": long(n)} if n % 3 else {"id": long(1), "b": text(str(n))})
        for n in range(1, 200)
    ]
    one = fold(spark, events, SAME)
    assert one[:3] == ("0199", False, "0196")
    assert one[3] == {"id": (1, "0199"), "a": (199, "0199"), "b": ("198", "0198")}
    for parts in (2, 5, 16):
        assert fold(spark, events, SAME, parts=parts) == one


def test_an_image_restricted_to_the_key_and_a_column_listed_twice(spark: SparkSession) -> None:
    """``only`` (a moved key's old key: its key columns alone) leaves the other columns out; a column an
    image lists twice takes its last value, as a map of the image would."""
    one, two, three = (bytes([0x04]) + _zigzag(n) for n in (1, 2, 3))  # the value union's long 1, 2, 3
    # One block of three entries (zigzag 3 = 6): id = 1, a = 2, a = 3; then the end (0).
    image = b"\x06" + b"\x04id" + one + b"\x02a" + two + b"\x02a" + three + b"\x00"
    routes = sql_string(routes_text(SAME))
    frame = spark.createDataFrame([("1", image)], "seq string, image binary")
    for only, expected in (("NULL", {"id": one, "a": three}), ("'2:id'", {"id": one})):
        call = f"{decoder.FOLD_FUNCTION}(seq, false, 0L, image, CAST({only} AS STRING), {routes}) AS f"
        [row] = frame.agg(F.expr(call)).collect()
        assert {name: cell["v"] for name, cell in row["f"]["columns"].items()} == expected, only


def test_a_hot_key_folds_without_holding_its_events(spark: SparkSession) -> None:
    """200,000 updates of one key in one batch: each task folds what it reads, the shuffle carries one row per
    task and key (a list of the key's events would carry all of them)."""
    count = 200_000
    frame = spark.range(count, numPartitions=4).selectExpr(
        "lpad(cast(id AS string), 8, '0') AS seq",
        "false AS del",
        "0L AS desc",
        "map('id', named_struct('member_long', 1L), 'a', named_struct('member_long', id)) AS image",
    )
    image = "map_from_entries(transform(map_entries(image), e -> struct(e.key, {})))"
    nulls = {name: f"CAST(NULL AS {VALUE[name].dataType.simpleString()})" for name in VALUE.fieldNames()}
    fields = ", ".join(f"'{name}', {'e.value.member_long' if name == 'member_long' else nulls[name]}" for name in nulls)
    frame = frame.selectExpr("seq", "del", "desc", f"{image.format(f'named_struct({fields})')} AS image")
    frame = frame.selectExpr("seq", "del", "desc", f"{BYTES} AS image")
    call = f"{decoder.FOLD_FUNCTION}(seq, del, desc, image, CAST(NULL AS STRING), {sql_string(routes_text(SAME))}) AS f"
    folded = frame.groupBy(F.lit(1).alias("key")).agg(F.expr(call))
    [row] = folded.collect()
    assert row["f"]["newest"] == f"{count - 1:08d}"
    assert row["f"]["columns"]["a"]["v"] == bytes([0x04]) + _zigzag(count - 1)  # branch 2 (long), the value
    shuffled = _shuffled_bytes(folded)
    assert 0 < shuffled < 64 * 1024, shuffled  # four folds of one key; the events would be megabytes


def _shuffled_bytes(frame: DataFrame) -> int:
    """What the shuffles of ``frame``'s last execution wrote (its plan's metrics)."""
    total = 0
    stack = [frame._jdf.queryExecution().executedPlan()]
    while stack:
        node = stack.pop()
        name = node.nodeName()
        if name == "AdaptiveSparkPlan":
            stack.append(node.executedPlan())
            continue
        if name.endswith("QueryStage"):
            stack.append(node.plan())
            continue
        metric = node.metrics().get("shuffleBytesWritten")
        if metric.isDefined():
            total += int(metric.get().value())
        children = node.children()
        stack.extend(children.apply(i) for i in range(children.length()))
    return total


def _zigzag(value: int) -> bytes:
    """An Avro long's bytes."""
    z, out = (value << 1) ^ (value >> 63), bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)
