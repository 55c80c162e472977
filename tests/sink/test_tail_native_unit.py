"""The fast lane's batch reader and fold (``tail_read.rs``, ``tail_fold.rs``) against Python's (``image_events``,
``fold_rows``, ``image_values``): the same batches, folds, key-less rows and values, value for value.

Bodies are written here with fastavro from the schema's own record (``avro.to_record``) so an image can hold
what no binlake parser writes but a body may (digits with blanks, underscores, exponents, non-ASCII digits;
every branch into every column type).
"""

from __future__ import annotations

import io
import math
import struct
from typing import Any

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlake.shared.codec import avro
from binlake.shared.event.model import ChangeEvent, Column, Columns, Origin, Source
from binlake.spark_sink.mirror import table_rows
from binlake.spark_sink.mirror.fold_rows import Projection
from binlake.spark_sink.mirror.image_events import CorruptBody
from binlake.spark_sink.mirror.merge_source import FoldedTable, KeylessRows
from binlake.spark_sink.mirror.plan import plan
from tests.bench import sink_bench
from tests.sink.test_sink_semantics import ROUND_1, ROUND_2, ROUND_2B, ROUND_3, ROUND_4

pytestmark = pytest.mark.unit

NS = "io.binlake.event.v1."
TYPES = {
    "c_bool": ("boolean", None, None),
    "c_i8": ("int8", None, None),
    "c_i16": ("int16", None, None),
    "c_i32": ("int32", None, None),
    "c_i64": ("int64", None, None),
    "c_u64": ("uint64", None, None),
    "c_d2": ("decimal", 10, 2),
    "c_d38": ("decimal", 38, 10),
    "c_d55": ("decimal", 5, 5),
    "c_f32": ("float32", None, None),
    "c_f64": ("float64", None, None),
    "c_str": ("string", None, None),
    "c_bin": ("bytes", None, None),
    "c_date": ("date", None, None),
    "c_ntz": ("datetime", None, None),
    "c_ts": ("timestamp", None, None),
}
"""A column of each mirror type (``typemap``): every branch goes into each."""
KEY_TYPES = ["int32", "int64", "uint64", "decimal(12,3)", "string", "bytes", "date", "datetime", "timestamp", "boolean"]
KEY_TYPES += ["float64"]  # folded by Python (its keys compare as Python's floats)


def _columns(key_type: str = "int64") -> list[Column]:
    key = Column("id", None, "decimal", 12, 3) if key_type == "decimal(12,3)" else Column("id", None, key_type)
    return [key, *(Column(n, None, t, p, s) for n, (t, p, s) in TYPES.items())]


def body(
    op: str,
    ok: int,
    *,
    table: str = "t",
    after: dict[str, Any] | None = None,
    before: dict[str, Any] | None = None,
    columns: list[Column] | None = None,
    key: tuple[str, ...] = ("id",),
    row: int = 0,
) -> bytes:
    """A changelog body whose images hold values in fastavro's tuple notation (``("long", 1)``...)."""
    event = ChangeEvent(
        op=op,  # type: ignore[arg-type]  # valid Op literals
        source=Source("test", "mysql", "d", None, table),
        order_key=f"{ok:020d}",
        ts_ms=ok,
        ingest_ts_ms=None,
        primary_key=list(key),
        columns=Columns(columns if columns is not None else _columns()),
        before=None,
        after=None,
        changed_columns=None,
        ddl=None,
        origin=Origin("in", 0, ok, row),
    )
    record = avro.to_record(event)
    record["before"], record["after"] = before, after
    out = io.BytesIO()
    fastavro.schemaless_writer(out, avro.parsed_schema(), record)
    return avro.MAGIC + avro.fingerprint() + out.getvalue()


# ---------------------------------------------------------------- values of every branch

_DIGIT_TEXTS = st.one_of(
    st.from_regex(r"\A[+-]?[0-9]{0,45}(\.[0-9]{0,45})?([eE][+-]?[0-9]{1,3})?\Z"),
    st.sampled_from(
        [
            " 12 ",
            "\x1c7\x1f",
            "\u30001.5\u3000",
            "1_000",
            "\u0661\u0662",
            "inf",
            "-Infinity",
            "nan",
            "1e200",
            "-1e-200",
            "1e-2000000",
            "9" * 39,
            "-0.000",
            "+.5",
            "5.",
            ".",
            "",
            "0x10",
            "99999.995",
            "-0.005",
        ]
    ),
)
VALUES = st.one_of(
    st.none(),
    st.booleans().map(lambda b: ("boolean", b)),
    st.integers(-(2**63), 2**63 - 1).map(lambda n: ("long", n)),
    st.integers(-(2**31), 2**31).map(lambda n: ("long", n)),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: ("double", f)),
    st.text(max_size=12).map(lambda s: ("string", s)),
    st.binary(max_size=12).map(lambda b: ("bytes", b)),
    _DIGIT_TEXTS.map(lambda t: (NS + "Decimal", {"digits": t})),
    _DIGIT_TEXTS.map(lambda t: (NS + "BigInteger", {"digits": t})),
    st.integers(-(2**31), 2**31 - 1).map(lambda n: (NS + "Date", {"days": n})),
    st.integers(-(2**62), 2**62).map(lambda n: (NS + "Time", {"micros": n})),
    st.integers(-(2**62), 2**62).map(lambda n: (NS + "LocalDateTime", {"micros": n})),
    st.integers(-(2**62), 2**62).map(lambda n: (NS + "Instant", {"micros": n})),
    st.text(max_size=5).map(lambda t: (NS + "Unparsed", {"text": t})),
)
IMAGES = st.fixed_dictionaries({}, optional=dict.fromkeys(TYPES, VALUES))


def _same(value: Any) -> Any:
    """A value compared by its bits (NaN equals NaN; 0.0 and -0.0 differ)."""
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    if isinstance(value, list):
        return [_same(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_same(v) for v in value)
    return value


def _both(
    bodies: list[bytes], table: str = "d.t"
) -> tuple[table_rows.Batch, table_rows.TableRows, table_rows.TableRows]:
    batch = table_rows.read([table] * len(bodies), bodies)
    rows = batch.rows[table]
    assert isinstance(rows, table_rows.NativeRows), "the fast lane reads the batch (make builds it)"
    return batch, rows.python(), rows


def _folds(bodies: list[bytes], key: list[str], *, truncated_at: str | None = None) -> list[FoldedTable]:
    batch, python, native = _both(bodies)
    result = plan({}, {}, batch.descriptors["d.t"], widening=False)
    return [r.fold("d.t", result, key, truncated_at=truncated_at) for r in (python, native)]


def _assert_same_fold(python: FoldedTable, native: FoldedTable) -> None:
    p, n = python.columns, native.columns
    assert _same(p.keys) == _same(n.keys)
    assert p.seq == n.seq
    assert p.delete == n.delete
    assert p.last_delete == n.last_delete
    assert _same(p.known) == _same(n.known)
    assert python.texts == native.texts


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(IMAGES, min_size=1, max_size=20))
def test_every_branch_converts_into_every_column_type_as_python_converts_it(images: list[dict[str, Any]]) -> None:
    bodies = [body("INSERT", i + 1, after={"id": ("long", i), **image}) for i, image in enumerate(images)]
    _assert_same_fold(*_folds(bodies, ["id"]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(KEY_TYPES),
    st.lists(st.tuples(st.sampled_from(["INSERT", "UPDATE", "DELETE"]), VALUES, VALUES, IMAGES), max_size=25),
)
def test_folds_of_any_ops_and_keys_are_python_s(
    key_type: str, changes: list[tuple[str, Any, Any, dict[str, Any]]]
) -> None:
    """Key columns of every type (a floating one, or a key only Python reads, folds in Python), key moves,
    NULL keys, deletes and columns left unknown."""
    columns = _columns(key_type)
    bodies = []
    for i, (op, old, new, image) in enumerate(changes):
        before = {"id": old, **image} if op != "INSERT" else None
        after = {"id": new, **image} if op != "DELETE" else None
        bodies.append(body(op, (i * 7) % 11 + 1, after=after, before=before, columns=columns, row=i))
    if bodies:
        _assert_same_fold(*_folds(bodies, ["id"]))


def test_a_truncation_and_sequences_tied_by_order_key_fold_alike() -> None:
    bodies = [
        body("INSERT", 5, after={"id": ("long", 1), "c_str": ("string", "a")}, row=1),
        body("INSERT", 5, after={"id": ("long", 1), "c_str": ("string", "b")}, row=0),  # same order_key: row decides
        body("UPDATE", 3, before={"id": ("long", 2)}, after={"id": ("long", 2), "c_i32": ("long", 4)}),
        body("DELETE", 9, before={"id": ("long", 2)}),
    ]
    for truncated_at in (None, f"{4:020d}"):
        python, native = _folds(bodies, ["id"], truncated_at=truncated_at)
        _assert_same_fold(python, native)
    assert native.columns.known[list(TYPES).index("c_str") + 1] is not None


def test_keyless_rows_are_python_s() -> None:
    columns = [Column("msg", None, "string"), Column("n", None, "int32")]
    bodies = [
        body("INSERT", 1, after={"msg": ("string", "one"), "n": ("long", 1)}, columns=columns, key=()),
        body("INSERT", 1, after={"msg": ("string", "one"), "n": ("long", 1)}, columns=columns, key=()),  # replay
        body("DELETE", 2, before={"msg": ("string", "two")}, columns=columns, key=()),
        body("INSERT", 3, after={"n": (NS + "Decimal", {"digits": " 7 "})}, columns=columns, key=(), row=1),
    ]
    batch, python, native = _both(bodies)
    projection = Projection(plan({}, {}, batch.descriptors["d.t"], widening=False), [])
    found: list[KeylessRows] = [r.keyless(projection, truncated_at=None) for r in (python, native)]
    assert found[0] == found[1]
    assert found[1].values == [["one", "two", None], [1, None, 7]]
    assert found[1].op == ["INSERT", "DELETE", "INSERT"]


def test_whole_batches_read_alike() -> None:
    """The bench's workload and the semantic rounds: every table's fold, control events and descriptors."""
    events = [*ROUND_1, *ROUND_2, *ROUND_2B, *ROUND_3, *ROUND_4]
    bodies = [i.value for i in sink_bench.generate(600, seed=5)] + [avro.encode(e) for e in events]
    tables = ["bench"] * 600 + [f"t.{e.source.table}" for e in events]
    native = table_rows.read(tables, bodies)
    python = table_rows.read(tables, bodies, native=False)
    assert all(isinstance(r, table_rows.NativeRows) for r in native.rows.values())
    assert native.control == python.control != []
    for table, rows in python.rows.items():
        assert native.descriptors[table] == python.descriptors[table]
        assert native.rows[table].summary() == rows.summary()
        result = plan({}, {}, python.descriptors[table], widening=False)
        key = list(python.descriptors[table][0].primary_key)
        if key:
            folds = [r.fold(table, result, key, truncated_at=None) for r in (rows, native.rows[table])]
            _assert_same_fold(*folds)
        else:
            projection = Projection(result, [])
            assert rows.keyless(projection, truncated_at=None) == native.rows[table].keyless(
                projection, truncated_at=None
            )


def test_a_batch_the_fast_lane_declines_is_python_s() -> None:
    """A body of another schema version, or one fastavro reads its own way (a boolean byte 2), makes the whole
    batch Python's; a string that is not UTF-8 is a corrupt changelog either way."""
    good = body("INSERT", 1, after={"id": ("long", 1), "c_bool": ("boolean", True), "c_str": ("string", "zz")})
    at = good.index(b"c_bool\x02\x01") + len(b"c_bool\x02")  # the boolean's byte
    odd = good[:at] + b"\x02" + good[at + 1 :]
    batch = table_rows.read(["d.t"] * 2, [good, odd])
    assert isinstance(batch.rows["d.t"], table_rows.PythonRows)
    older = [v for v in avro.released_versions() if v != avro.CURRENT_VERSION]
    if older:
        legacy = avro.MAGIC + avro.fingerprint(older[-1]) + good[10:]
        assert isinstance(table_rows.read(["d.t"] * 2, [good, legacy]).rows["d.t"], table_rows.PythonRows)
    broken = good.replace(b"zz", b"\xff\xff")
    with pytest.raises(CorruptBody):
        table_rows.read(["d.t"], [broken])


def test_a_float_key_compares_as_python_s() -> None:
    """0.0 and -0.0 are one key in Python; NaN is never equal to itself."""
    columns = _columns("float64")
    bodies = [
        body("INSERT", 1, after={"id": ("double", 0.0), "c_i32": ("long", 1)}, columns=columns),
        body("INSERT", 2, after={"id": ("double", -0.0), "c_i32": ("long", 2)}, columns=columns),
        body("INSERT", 3, after={"id": ("double", math.nan)}, columns=columns),
        body("INSERT", 4, after={"id": ("double", math.nan)}, columns=columns),
    ]
    python, native = _folds(bodies, ["id"])
    _assert_same_fold(python, native)
    assert len(native.columns) == 3
