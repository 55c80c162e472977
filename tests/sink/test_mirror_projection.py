"""The mirror projection's SQL: one expression pair per physical column, whatever the number of descriptors.

A format without types (Maxwell) types each value on its own, so NULLs in different columns give a table one
descriptor per combination; the projection must not grow with them (a CASE per descriptor and column made
plans the driver's heap could not hold).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping

import pytest
from pyspark.sql.types import DataType, LongType, StringType

from binlake.spark_sink.mirror.plan import ColumnDesc, Descriptor, plan
from binlake.spark_sink.mirror.project import DESC, projection

pytestmark = pytest.mark.unit

NAMES = ("id", "a", "b", "c", "d", "e", "f", "g", "h", "i", "j")


def _descriptors(typed: str = "string") -> list[Descriptor]:
    """One descriptor per combination of NULL (``unknown``) columns among a..j: 1,024 of them."""
    found = []
    for n, nulls in enumerate(itertools.product((False, True), repeat=len(NAMES) - 1)):
        columns = [ColumnDesc("id", "int64", None, None)]
        columns += [
            ColumnDesc(name, "unknown" if null else typed, None, None)
            for name, null in zip(NAMES[1:], nulls, strict=True)
        ]
        found.append(Descriptor(n + 1, tuple(columns), ("id",)))
    return found


def _sql(descs: list[Descriptor], existing: Mapping[str, DataType]) -> tuple[list[str], list[str]]:
    result = plan(dict(existing), {}, descs, widening=True)
    physical = sorted(result.types)
    return projection("_image", "false", descs=descs, result=result, physical=physical), physical


def test_size_does_not_grow_with_descriptors() -> None:
    existing = {"id": LongType(), **{name: StringType() for name in NAMES[1:]}}
    one, physical = _sql(_descriptors()[:1], existing)
    many, _ = _sql(_descriptors(), existing)
    # Every descriptor routes every column to its own physical column: the projection is the one-descriptor one.
    assert many == one
    assert DESC not in " ".join(many)
    assert len(physical) == len(NAMES)


def test_fallback_routes_by_the_shorter_list() -> None:
    """Three descriptors of 1,025 type column a as int64, which goes to a fallback column a__bigint: the value of
    a is NULL for those three, a__bigint takes only theirs; both lists name the three, not the other 1,022."""
    existing = {"id": LongType(), **{name: StringType() for name in NAMES[1:]}}
    descs = _descriptors()
    odd = [
        Descriptor(5000 + n, (ColumnDesc("id", "int64", None, None), ColumnDesc("a", "int64", None, None)), ("id",))
        for n in range(3)
    ]
    sql, physical = _sql(descs + odd, existing)
    assert "a__bigint" in physical
    by_name = {physical[i]: sql[4 + 2 * i] for i in range(len(physical))}
    known = {physical[i]: sql[5 + 2 * i] for i in range(len(physical))}
    in_lists = [re.findall(rf"{DESC} IN \(([^)]*)\)", text) for text in by_name.values()]
    assert all(len(items.split(",")) == 3 for found in in_lists for items in found)
    assert f"NOT ({DESC} IN (5000L, 5001L, 5002L))" in by_name["a"]
    assert by_name["a__bigint"].startswith(f"CASE WHEN {DESC} IN (5000L, 5001L, 5002L) THEN")
    # b is not listed by the three: unknown for them, known (from the image) for the rest.
    assert (
        known["b"]
        == f"(NOT ({DESC} IN (5000L, 5001L, 5002L))) AND map_contains_key(_image, 'b') AS _k{physical.index('b')}"
    )
    assert known["id"] == f"map_contains_key(_image, 'id') AS _k{physical.index('id')}"


def test_a_column_no_descriptor_lists_is_unknown() -> None:
    existing = {"id": LongType(), "gone": StringType()}
    sql, physical = _sql(_descriptors()[:2], existing)
    i = physical.index("gone")
    assert sql[4 + 2 * i] == f"CAST(NULL AS string) AS _v{i}"
    assert sql[5 + 2 * i] == f"false AS _k{i}"
