"""A Delta table read without Spark, as Python rows: what tests compare lakes and tombstones by."""

from __future__ import annotations

from typing import Any

from deltalake import DeltaTable, QueryBuilder


def query_rows(table: DeltaTable, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    """``sql`` over ``table`` (registered as ``t``) by delta-rs: its column names and rows, in the order found."""
    found = QueryBuilder().register("t", table).execute(sql).read_all()
    rows: list[tuple[Any, ...]] = []
    for part in found.to_batches():
        rows += zip(*(column.to_pylist() for column in part.columns), strict=True)
    return list(found.schema.names), rows
