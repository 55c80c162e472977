"""The pure parts of the mirror writer without Spark: events read from bodies, value conversions, the fold.

(Their equality with the Spark mirror, table by table, is ``test_mirror_without_spark``'s.)
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path

import pytest
from pydantic import ValidationError
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    StringType,
    TimestampNTZType,
)

from binlake.shared.codec import avro
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.shared.event.values import BigInt, SqlTime, Unparsed, Value
from binlake.spark_sink.mirror import follower, image_events, table_rows
from binlake.spark_sink.mirror.control_events import ControlRow, controls
from binlake.spark_sink.mirror.fold_rows import Projection
from binlake.spark_sink.mirror.image_values import converter, java_double, key_text
from binlake.spark_sink.mirror.merge_source import FoldedTable
from binlake.spark_sink.mirror.plan import plan
from tests.bench import sink_bench
from tests.sink.test_sink_semantics import ROUND_1, ROUND_2, ROUND_3
from tests.support.spark_fixtures import sink_settings_for_tests

pytestmark = pytest.mark.unit

COLUMNS = [Column("id", "int", "int32"), Column("a", "int", "int32"), Column("b", "varchar(8)", "string")]


def _event(op: str, ok: int, *, before: dict[str, Value] | None = None, after: dict[str, Value] | None = None) -> bytes:
    return avro.encode(
        ChangeEvent(
            op=op,  # type: ignore[arg-type]  # valid Op literals
            source=Source("test", "mysql", "d", None, "t"),
            order_key=f"{ok:020d}",
            ts_ms=ok,
            ingest_ts_ms=None,
            primary_key=["id"],
            columns=Columns(COLUMNS),
            before=before,
            after=after,
            changed_columns=None,
            ddl=None,
            origin=Origin("in", 0, ok, 0),
        )
    )


def _tagged(value: Value) -> image_events.Tagged:
    """An image value as the mirror reads it: encoded, then read back from the body."""
    body = _event("INSERT", 1, after={"id": 1, "b": value})
    events = image_events.events(["d.t"], [body])
    image = events.rows["d.t"][0].after
    assert image is not None
    return image["b"]


def test_the_native_reader_and_fastavro_give_the_same_events() -> None:
    bodies = [i.value for i in sink_bench.generate(400, seed=3)]
    events = [*ROUND_1, *ROUND_2, *ROUND_3]
    bodies += [avro.encode(e) for e in events]
    tables = ["bench"] * 400 + [f"t.{e.source.table}" for e in events]
    shape, _, _ = image_events._reader(avro.fingerprint())
    assert shape is not None, "the fast lane is built (make builds it)"
    native = image_events.events(tables, bodies)
    assert sum(len(rows) for rows in native.rows.values()) + len(native.control) == len(bodies)
    assert native == image_events.events(tables, bodies, native=False)


def test_events_split_rows_and_control_and_order_descriptors_by_first_event() -> None:
    bodies = [avro.encode(e) for e in (*ROUND_1, *ROUND_3)]
    tables = [f"t.{e.source.table}" for e in (*ROUND_1, *ROUND_3)]
    events = image_events.events(tables, bodies)
    assert sum(len(rows) for rows in events.rows.values()) + len(events.control) == len(bodies)
    assert [c.op for c in events.control] == ["TRUNCATE"] * 3
    assert [c.seq for c in events.control] == sorted(c.seq for c in events.control)
    odd = events.descriptors["t.odd"]
    assert [len(d.columns) for d in odd] == [3, 4]  # the descriptor adding tick`col came later


@pytest.mark.parametrize(
    ("value", "target", "expected"),
    [
        (True, BooleanType(), True),
        (0, BooleanType(), False),
        ("true", BooleanType(), None),  # no string branch for booleans
        (300, ByteType(), None),  # out of range
        (BigInt(2**64 - 1), DecimalType(20, 0), "18446744073709551615"),
        (Decimal("123.455"), DecimalType(10, 2), "123.46"),  # half up
        (Decimal("123.455"), IntegerType(), None),  # a fraction: ANSI try_cast refuses it
        (Decimal("1E+3"), LongType(), 1000),  # the codec writes its digits as 1000
        (Decimal("99999999.995"), DecimalType(10, 2), None),  # rounds out of range
        (True, DecimalType(5, 2), "1.00"),
        (SqlTime(-5), LongType(), -5),
        (1e20, StringType(), "1.0E20"),
        (b"\x00\xff", StringType(), "AP8="),
        (b"\x00\xff", BinaryType(), b"\x00\xff"),
        (7, DoubleType(), 7.0),
        ("7", DoubleType(), None),
        (dt.date(1969, 12, 31), DateType(), -1),
        (dt.datetime(1970, 1, 1, 0, 0, 1), TimestampNTZType(), 1_000_000),
        (Unparsed("0000-00-00"), StringType(), None),
        (None, StringType(), None),
    ],
)
def test_values_convert_as_the_spark_mirror_converts_them(value: Value, target: object, expected: object) -> None:
    assert converter(target)(_tagged(value)) == expected  # type: ignore[arg-type]


def test_doubles_print_as_java_prints_them() -> None:
    cases = {1.0: "1.0", 1e7: "1.0E7", 9999999.0: "9999999.0", 0.001: "0.001", 1.5e-4: "1.5E-4", -0.0: "-0.0"}
    cases |= {float("nan"): "NaN", float("-inf"): "-Infinity", -2.5e10: "-2.5E10"}
    assert {v: java_double(v) for v in cases} == cases


def test_tombstone_keys_are_the_same_text_whatever_the_width() -> None:
    assert key_text(["1.50"], [DecimalType(10, 2)]) == key_text(["1.5000"], [DecimalType(12, 4)]) == '["1.5"]'
    assert key_text([7], [IntegerType()]) == key_text([7], [LongType()]) == '["7"]'
    assert key_text([1.1], [FloatType()]) == '["1.100000023841858"]'
    assert key_text([-1], [DateType()]) == '["1969-12-31 00:00:00"]'
    # Spark 4's own texts of dates and timestamps beyond Python's years 1-9999 (a date column holds any int32):
    days = [-719163, 2932897, -1000000, -719162]
    assert [key_text([d], [DateType()]) for d in days] == [
        '["0000-12-31 00:00:00"]',
        '["+10000-01-01 00:00:00"]',
        '["-0768-02-04 00:00:00"]',
        '["0001-01-01 00:00:00"]',
    ]
    micros = [253402300800000000, -62135596800000001, -9223372036854775]
    assert [key_text([m], [TimestampNTZType()]) for m in micros] == [
        '["+10000-01-01 00:00:00"]',
        '["0000-12-31 23:59:59.999999"]',
        '["1677-09-21 00:12:43.145225"]',
    ]
    assert key_text(['a"\u0001'], [StringType()]) == '["a\\"\\u0001"]'
    assert key_text([b"\xab", None], [BinaryType(), StringType()]) == '["AB",null]'


NATIVE = pytest.mark.parametrize("native", [False, True], ids=["python", "native"])
"""The fold in Python (``fold_rows``) and in the fast lane (``tail_fold.rs``): the same answers."""


def _folded(bodies: list[bytes], *, native: bool) -> FoldedTable:
    batch = table_rows.read(["d.t"] * len(bodies), bodies)
    rows = batch.rows["d.t"]
    if not native:
        rows = rows.python() if isinstance(rows, table_rows.NativeRows) else rows
    else:
        assert isinstance(rows, table_rows.NativeRows), "the fast lane is built (make builds it)"
    result = plan({}, {}, batch.descriptors["d.t"], widening=False)
    return rows.fold("d.t", result, ["id"], truncated_at=None)


def _fold(
    bodies: list[bytes], *, native: bool
) -> dict[tuple[object, ...], tuple[str, bool, str | None, dict[int, object]]]:
    c = _folded(bodies, native=native).columns
    return {
        key: (
            c.seq[j][:20],
            c.delete[j],
            c.last_delete[j] and c.last_delete[j][:20],  # type: ignore[index]  # not None when truthy
            {i: held[0][j] for i, held in enumerate(c.known) if held is not None and held[1][j] is not None},
        )
        for j, key in enumerate(zip(*c.keys, strict=True))
    }


@NATIVE
def test_the_fold_keeps_per_column_the_newest_event_that_knows_it(native: bool) -> None:
    folded = _fold(
        [
            _event("INSERT", 3, after={"id": 1, "a": 1, "b": "x"}),
            _event("UPDATE", 5, before={"id": 1}, after={"id": 1, "b": "y"}),  # a absent: unknown, not NULL
            _event("UPDATE", 4, before={"id": 1}, after={"id": 1, "a": 9}),  # older than 5, newer than 3
        ],
        native=native,
    )
    assert folded == {(1,): (f"{5:020d}", False, None, {1: 9, 2: "y"})}


@NATIVE
def test_a_key_move_deletes_the_old_key_and_a_null_key_is_left_out(native: bool) -> None:
    folded = _fold(
        [
            _event("UPDATE", 6, before={"id": 1, "a": 1}, after={"id": 2, "a": 1}),
            _event("INSERT", 7, after={"id": None, "a": 5}),
        ],
        native=native,
    )
    assert folded[(1,)][:3] == (f"{6:020d}", True, f"{6:020d}")
    assert folded[(2,)] == (f"{6:020d}", False, None, {1: 1})
    assert (None,) not in folded


@NATIVE
def test_a_delete_then_insert_in_one_batch_restarts_the_unknown_columns(native: bool) -> None:
    bodies = [
        _event("UPDATE", 1, before={"id": 1}, after={"id": 1, "a": 3}),
        _event("DELETE", 2, before={"id": 1}),
        _event("INSERT", 3, after={"id": 1, "b": "re"}),
    ]
    folded = _folded(bodies, native=native)
    values, seqs = folded.inserted([None])
    assert [v[0] for v in values] == [1, None, "re"]  # a: known before the delete only: NULL
    assert seqs == [folded.columns.seq[0]]
    assert folded.inserted([folded.columns.seq[0]]) == ([[], [], []], [])  # not newer than its tombstone: no row


@NATIVE
def test_a_keyless_table_keeps_one_row_per_origin(native: bool) -> None:
    body = _event("INSERT", 1, after={"id": 1, "a": 2})
    batch = table_rows.read(["d.t"] * 2, [body, body], native=native)  # delivered twice
    result = plan({}, {}, batch.descriptors["d.t"], widening=False)
    rows = batch.rows["d.t"].keyless(Projection(result, []), truncated_at=None)
    assert rows.values == [[1], [2], [None]]
    assert len(rows) == 1


def test_control_rows_become_per_table_instructions() -> None:
    found = controls(
        [
            ControlRow("t", "TRUNCATE", "2", 20, None, None),
            ControlRow("t", "DDL", "3", 30, "ALTER_TABLE", "ALTER TABLE t ADD COLUMN c INT"),
            ControlRow("t", "DDL", "4", 40, "DROP_TABLE", "DROP TABLE t"),
        ]
    )
    assert found["t"].truncated_at == "4" and found["t"].truncated_ts_ms == 40
    assert found["t"].truncations == [("2", 20), ("4", 40)]
    assert [c.name for c in found["t"].added] == ["c"]


def test_the_mirror_writer_settings_refuse_what_it_cannot_do() -> None:
    sink_settings_for_tests(queries="mirrors", mirror_writer="python", type_widening=False)
    wrongs: list[tuple[dict[str, object], str]] = [
        ({"queries": "both", "type_widening": False}, "QUERIES=mirrors"),
        ({"queries": "mirrors"}, "TYPE_WIDENING=false"),
        ({"queries": "mirrors", "type_widening": False, "history_tables": ["d.t"]}, "HISTORY_TABLES"),
    ]
    for wrong, says in wrongs:
        with pytest.raises(ValidationError, match=says):
            sink_settings_for_tests(mirror_writer="python", **wrong)


def test_a_batch_takes_versions_while_their_rows_stay_within_the_cap(tmp_path: Path) -> None:
    log = tmp_path / "_delta_log"
    log.mkdir()
    for version, rows in enumerate([0, 60_000, 30_000, 20_000, 150_000, 10]):
        add = {"add": {"path": f"{version}.parquet", "stats": json.dumps({"numRecords": rows})}}
        (log / f"{version:020d}.json").write_text(json.dumps({"commitInfo": {}}) + "\n" + json.dumps(add))
    assert follower._last_version(str(tmp_path), 0, 5) == 2  # 90,000 rows; a third version passes 100,000
    assert follower._last_version(str(tmp_path), 3, 5) == 3  # the next version alone passes it
    assert follower._last_version(str(tmp_path), 4, 5) == 4  # one version at least, however big
    assert follower._last_version(str(tmp_path), 5, 5) == 5
