"""A keyed table's batch folded and made the MERGE's source (``merge_rules``' ``s``) in Arrow, without Spark.

Shared by the mirror writer without Spark (``delta_rs_mirror``, which MERGEs the source with delta-rs) and
the current-state reads without Spark (``current_held``, which MERGEs it into its copy in DuckDB): the
batch's events folded per key (``FoldColumns``: made by ``table_rows``, natively or by ``fold_rows``), each
key's tombstone text and floor (the newest deleted-key row of the tombstone table the batch pinned), and the
Arrow table holding per key its values, their sequences and its floor; for a key-less table, its new rows as
Arrow columns (``keyless_columns``).
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
class FoldColumns:
    """A keyed table's fold (``fold_rows.Folded`` per key) as columns, one entry per folded key."""

    keys: list[list[Any]]
    """Per key column (``Projection.key_index`` order), its typed values."""
    known: list[tuple[list[Any], list[str | None]] | None]
    """Per physical column (None for a key column): the newest known value and its sequence (None: unknown)."""
    seq: list[str]
    delete: list[bool]
    last_delete: list[str | None]

    def __len__(self) -> int:
        return len(self.seq)


def columns_of(rows: list[Folded], projection: Projection) -> FoldColumns:
    """Python's fold (``fold_rows.fold``) as columns."""
    key_index = projection.key_index
    known: list[tuple[list[Any], list[str | None]] | None] = []
    for i in range(len(projection.types)):
        if i in key_index:
            known.append(None)
            continue
        held = [row.known.get(i) for row in rows]
        known.append(([None if h is None else h[0] for h in held], [None if h is None else h[1] for h in held]))
    return FoldColumns(
        [[row.key[p] for row in rows] for p in range(len(key_index))],
        known,
        [row.seq for row in rows],
        [row.delete for row in rows],
        [row.last_delete for row in rows],
    )


@dataclass(frozen=True, slots=True)
class FoldedTable:
    """One keyed table's events of a batch, folded per key, with each key's tombstone text."""

    table: str
    projection: Projection
    columns: FoldColumns
    texts: list[str]
    """Per folded key, its tombstone key text (``image_values.key_text``)."""

    @classmethod
    def of(
        cls, table: str, projection: Projection, columns: FoldColumns, texts: list[str] | None = None
    ) -> FoldedTable:
        """The fold of ``table``, its key texts computed here unless given (the native fold gives them)."""
        if texts is None:
            key_types = [projection.types[i] for i in projection.key_index]
            texts = [key_text(list(key), key_types) for key in zip(*columns.keys, strict=True)]
        return cls(table, projection, columns, texts)

    def deleted(self) -> list[tuple[str, str, str]]:
        """The keys the batch leaves deleted, as tombstone rows (source table, key text, sequence)."""
        c = self.columns
        return [(self.table, t, seq) for t, seq, d in zip(self.texts, c.seq, c.delete, strict=True) if d]

    def inserted(self, key_floors: list[str | None]) -> tuple[list[list[Any]], list[str]]:
        """The rows a mirror holding none of the keys gets (``merge_rules``' insert clause, per key): per physical
        column its values (a value no later than the key's floor or its last DELETE in the batch is NULL), and
        the rows' sequences; a key the batch leaves deleted, or not newer than its floor, gets no row."""
        c = self.columns
        floors_ = [f or "" for f in key_floors]
        kept = [j for j in range(len(c)) if not c.delete[j] and c.seq[j] > floors_[j]]
        out: list[list[Any]] = []
        key_index = self.projection.key_index
        for i, held in enumerate(c.known):
            if held is None:
                out.append([c.keys[key_index.index(i)][j] for j in kept])
                continue
            values, seqs = held
            out.append([values[j] if _live(seqs[j], floors_[j], c.last_delete[j]) else None for j in kept])
        return out, [c.seq[j] for j in kept]


def _live(at: str | None, floor: str, last_delete: str | None) -> bool:
    """Whether a value known at ``at`` is above the key's floor and no later DELETE of the batch cleared it."""
    return at is not None and at > floor and (last_delete is None or at > last_delete)


def fold_table(
    table: str, events: list[RowEvent], plan: Plan, key: list[str], *, truncated_at: str | None
) -> FoldedTable:
    """Fold a keyed table's row events over its mirror's ``plan`` in Python (``fold_rows.fold``)."""
    projection = Projection(plan, key)
    rows = fold(events, projection, key, truncated_at=truncated_at)
    return FoldedTable.of(table, projection, columns_of(rows, projection))


def floor_rows(tombstones: DeltaTable | None, tables: list[str]) -> Table:
    """The newest tombstone of every deleted key of ``tables`` in the pinned tombstone table, as columns ``tbl``
    (source table), ``k`` (key text) and ``f`` (floor)."""
    names = ["tbl", "k", "f"]
    if tombstones is None or not tables:
        return Table.from_arrays([Array([], DataType.string()) for _ in names], names=names)
    table, key = double_quotes(TOMBSTONE_TABLE), double_quotes(TOMBSTONE_KEY)
    wanted = ", ".join(sql_text(t) for t in tables)
    reader = (
        QueryBuilder()
        .register("d", tombstones)
        .execute(
            f"SELECT CAST({table} AS VARCHAR) AS tbl, CAST({key} AS VARCHAR) AS k, "
            f"CAST(max({double_quotes(ORDER_KEY)}) AS VARCHAR) AS f FROM d WHERE {table} IN ({wanted}) "
            f"GROUP BY {table}, {key}"
        )
    )
    return reader.read_all()


def merge_source(columns: FoldColumns, projection: Projection, key_floors: list[str | None]) -> Table:
    """The MERGE's source (``merge_rules``' ``s``): per key its values, their sequences and its floor."""
    arrays: list[Array] = []
    names: list[str] = []
    key_index = projection.key_index
    for i, spark_type in enumerate(projection.types):
        held = columns.known[i]
        if held is None:
            arrays.append(array(columns.keys[key_index.index(i)], spark_type))
            names.append(f"_v{i}")
            continue
        arrays.append(array(held[0], spark_type))
        names.append(f"_v{i}")
        arrays.append(Array(held[1], DataType.string()))
        names.append(f"_o{i}")
    arrays.append(Array(columns.seq, DataType.string()))
    names.append(ORDER_KEY)
    arrays.append(Array(columns.delete, DataType.bool()))
    names.append("_delete")
    arrays.append(Array(columns.last_delete, DataType.string()))
    names.append(LAST_DELETE)
    arrays.append(Array(key_floors, DataType.string()))
    names.append(FLOOR)
    return Table.from_arrays(arrays, names=names)


@dataclass(frozen=True, slots=True)
class KeylessRows:
    """A key-less table's new rows of a batch (``fold_rows.keyless_rows``) as columns."""

    values: list[list[Any]]
    """Per physical column, its typed values (None where the event does not know the column)."""
    seq: list[str]
    op: list[str]
    origin: list[str]

    def __len__(self) -> int:
        return len(self.seq)

    @classmethod
    def of(cls, made: list[tuple[list[Any], RowEvent]], width: int) -> KeylessRows:
        return cls(
            [[values[i] for values, _ in made] for i in range(width)],
            [e.seq for _, e in made],
            [e.op for _, e in made],
            [e.origin for _, e in made],
        )

    def without(self, origins: set[str]) -> KeylessRows:
        """The rows whose origin is not in ``origins`` (those a mirror holds already)."""
        kept = [j for j, origin in enumerate(self.origin) if origin not in origins]
        return KeylessRows(
            [[column[j] for j in kept] for column in self.values],
            [self.seq[j] for j in kept],
            [self.op[j] for j in kept],
            [self.origin[j] for j in kept],
        )


def keyless_columns(rows: KeylessRows, projection: Projection) -> tuple[list[Array], list[str]]:
    """A key-less table's new rows as Arrow columns and their names: the physical columns, then the sequence,
    op and origin (what the mirror writer appends and the read adds to the mirror)."""
    columns = [array(values, t) for values, t in zip(rows.values, projection.types, strict=True)]
    names = list(projection.physical)
    for name, values in ((ORDER_KEY, rows.seq), (OP, rows.op), (ORIGIN, rows.origin)):
        columns.append(Array(values, DataType.string()))
        names.append(name)
    return columns, names
