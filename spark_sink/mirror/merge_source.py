"""A keyed table's batch folded and made the MERGE's source (``merge_rules``' ``s``) in Arrow, without Spark.

Shared by the mirror writer without Spark (``delta_rs_mirror``, which MERGEs the source with delta-rs) and
the current-state reads without Spark (``current_duckdb``, which joins it with the mirror in DuckDB): the
batch's events folded per key (``fold_rows``), each key's tombstone text and floor (the newest deleted-key
row of the tombstone table the batch pinned), and the Arrow table holding per key its values, their
sequences and its floor; for a key-less table, its new rows as Arrow columns (``keyless_columns``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from arro3.core import Array, DataType, Table
from deltalake import DeltaTable, QueryBuilder

from binlake.spark_sink.layout import OP, ORDER_KEY, ORIGIN, TOMBSTONE_KEY, TOMBSTONE_TABLE
from binlake.spark_sink.mirror.arrow_columns import array
from binlake.spark_sink.mirror.fold_rows import Folded, Projection, fold
from binlake.spark_sink.mirror.image_events import RowEvent
from binlake.spark_sink.mirror.image_values import key_text
from binlake.spark_sink.mirror.merge_rules import FLOOR, LAST_DELETE, double_quotes
from binlake.spark_sink.mirror.plan import Plan


def sql_text(text: str) -> str:
    """``text`` as a SQL string literal (DataFusion's and DuckDB's alike)."""
    return "'" + text.replace("'", "''") + "'"


@dataclass(frozen=True, slots=True)
class FoldedTable:
    """One keyed table's events of a batch, folded per key, with each key's tombstone text."""

    table: str
    projection: Projection
    rows: list[Folded]
    texts: list[str]
    """Per folded key, its tombstone key text (``image_values.key_text``)."""

    def deleted(self) -> list[tuple[str, str, str]]:
        """The keys the batch leaves deleted, as tombstone rows (source table, key text, sequence)."""
        return [(self.table, text, row.seq) for row, text in zip(self.rows, self.texts, strict=True) if row.delete]

    def source(self, tombstones: DeltaTable | None) -> Table:
        """The MERGE's source: its keys above their floors in the pinned ``tombstones`` (``merge_source``)."""
        found = floors(tombstones, self.table, set(self.texts))
        return merge_source(self.rows, self.projection, [found.get(t) for t in self.texts])


def fold_table(
    table: str, events: list[RowEvent], plan: Plan, key: list[str], *, truncated_at: str | None
) -> FoldedTable:
    """Fold a keyed table's row events over its mirror's ``plan`` (``fold_rows.fold``)."""
    projection = Projection(plan, key)
    rows = fold(events, projection, key, truncated_at=truncated_at)
    key_types = [projection.types[i] for i in projection.key_index]
    return FoldedTable(table, projection, rows, [key_text(list(row.key), key_types) for row in rows])


def floors(tombstones: DeltaTable | None, table: str, keys: set[str]) -> dict[str, str]:
    """The newest tombstone of each of ``keys`` of ``table`` in the pinned tombstone table (keys without one
    are left out)."""
    if tombstones is None or not keys:
        return {}
    quoted_table = double_quotes(TOMBSTONE_TABLE)
    reader = (
        QueryBuilder()
        .register("d", tombstones)
        .execute(
            f"SELECT {double_quotes(TOMBSTONE_KEY)} AS k, max({double_quotes(ORDER_KEY)}) AS f FROM d "
            f"WHERE {quoted_table} = {sql_text(table)} GROUP BY {double_quotes(TOMBSTONE_KEY)}"
        )
    )
    out: dict[str, str] = {}
    for batch in reader.read_all().to_batches():
        for k, f in zip(batch.column("k").to_pylist(), batch.column("f").to_pylist(), strict=True):
            if k in keys:
                out[k] = f
    return out


def merge_source(folded: list[Folded], projection: Projection, key_floors: list[str | None]) -> Table:
    """The MERGE's source (``merge_rules``' ``s``): per key its values, their sequences and its floor."""
    columns: list[Array] = []
    names: list[str] = []
    key_index = projection.key_index
    for i, spark_type in enumerate(projection.types):
        if i in key_index:
            position = key_index.index(i)
            columns.append(array([row.key[position] for row in folded], spark_type))
            names.append(f"_v{i}")
            continue
        known = [row.known.get(i) for row in folded]
        columns.append(array([None if k is None else k[0] for k in known], spark_type))
        names.append(f"_v{i}")
        columns.append(Array([None if k is None else k[1] for k in known], DataType.string()))
        names.append(f"_o{i}")
    columns.append(Array([row.seq for row in folded], DataType.string()))
    names.append(ORDER_KEY)
    columns.append(Array([row.delete for row in folded], DataType.bool()))
    names.append("_delete")
    columns.append(Array([row.last_delete for row in folded], DataType.string()))
    names.append(LAST_DELETE)
    columns.append(Array(key_floors, DataType.string()))
    names.append(FLOOR)
    return Table.from_arrays(columns, names=names)


def keyless_columns(made: list[tuple[list[Any], RowEvent]], projection: Projection) -> tuple[list[Array], list[str]]:
    """A key-less table's new rows (``fold_rows.keyless_rows``) as Arrow columns and their names: the physical
    columns, then the sequence, op and origin (what the mirror writer appends and the read adds to the mirror)."""
    columns = [array([values[i] for values, _ in made], t) for i, t in enumerate(projection.types)]
    names = list(projection.physical)
    for name, values in (
        (ORDER_KEY, [e.seq for _, e in made]),
        (OP, [e.op for _, e in made]),
        (ORIGIN, [e.origin for _, e in made]),
    ):
        columns.append(Array(values, DataType.string()))
        names.append(name)
    return columns, names
