"""A current-state reader's own copy of its tables, kept in DuckDB between reads and moved on by the changelog.

``current_duckdb`` starts a copy from the mirrors (``hold``: each mirror's rows as a pinned version holds
them, and the tombstones' floors of the tables' deleted keys) and moves it on with changelog events
(``apply``), as the mirror writer moves a mirror on, with the same rules:

- schema: the table gets the columns its events' descriptors and ``ALTER TABLE ... ADD`` name, a type
  widened where the mirror would widen it (``schema.planned_from``, from the copy's own properties);
- TRUNCATE: rows and floors older than it go, and events not newer are ignored;
- a keyed table's events are folded per key (``table_rows``) and MERGEd with ``merge_rules``' clauses above
  each key's floor (its row's sequence, or its floor for a key the copy does not hold); the keys the events
  leave deleted become floors; a key-less table gets the origins it does not hold.

Applying events a copy holds already changes nothing (each key's floor, each origin), as a replayed batch
changes nothing in a mirror: so the tail past the mirrors may overlap what the pinned mirrors hold.

The copy lives in temporary tables of the reader's DuckDB connection (``drop`` removes them); a table written
over and over is rewritten whole once the rows it changed pass the rows it holds and 50,000, so the space of
its deleted and updated rows is given back in one pass.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Final

import duckdb
from arro3.core import Array, DataType, Table
from pyspark.sql.types import (
    BinaryType,
    DecimalType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark.sql.types import DataType as SparkType

from binlake.spark_sink.layout import ORDER_KEY, ORIGIN, PROP_FALLBACKS, PROP_TRUNCATED
from binlake.spark_sink.mirror.apply import declared_descriptors
from binlake.spark_sink.mirror.control_events import TableControl, controls
from binlake.spark_sink.mirror.fold_rows import Projection
from binlake.spark_sink.mirror.merge_rules import FLOOR, double_quotes, merge_clauses
from binlake.spark_sink.mirror.merge_source import FoldedTable, keyless_columns, merge_source, sql_text
from binlake.spark_sink.mirror.plan import Descriptor, Plan
from binlake.spark_sink.mirror.schema import new_mirror, planned_from
from binlake.spark_sink.mirror.table_rows import Batch, TableRows
from binlake.spark_sink.settings import SinkSettings

_KEY_TEXT: Final = "_k"
"""The merge source's column of each key's text (``image_values.key_text``: the floors' key)."""
REWRITE_AT_LEAST: Final = 50_000
"""Changed rows of a table before it is rewritten whole at the earliest (a small table is not rewritten often)."""

_DUCKDB_TYPES: Final = {
    "string": "VARCHAR",
    "binary": "BLOB",
    "timestamp": "TIMESTAMPTZ",
    "timestamp_ntz": "TIMESTAMP",
}


def duckdb_type(spark_type: SparkType) -> str:
    """A mirror column's type (Spark's, ``typemap``) as DuckDB names it."""
    if isinstance(spark_type, DecimalType):
        return f"DECIMAL({spark_type.precision},{spark_type.scale})"
    if isinstance(spark_type, StringType | BinaryType | TimestampType | TimestampNTZType):
        return _DUCKDB_TYPES[spark_type.simpleString()]
    return spark_type.simpleString().upper()  # boolean, tinyint, smallint, int, bigint, float, double, date


@dataclass(slots=True)
class HeldTable:
    """One table of the copy: its DuckDB table, columns and properties (the mirror's: key, fallbacks,
    TRUNCATE)."""

    name: str
    schema: StructType
    properties: dict[str, str]
    changed: int = 0
    """Rows updated or deleted since the table was last written whole."""


@dataclass(slots=True)
class HeldTables:
    """The copy of a set of tables on a DuckDB connection (module doc)."""

    connection: duckdb.DuckDBPyConnection
    settings: SinkSettings
    tables: dict[str, HeldTable] = field(default_factory=dict)
    """Source table -> its copy (a table the lake held nothing of yet has none)."""
    floors: str = field(default_factory=lambda: _name("floors"))
    """The DuckDB table of the deleted keys' floors: (source table, key text, newest DELETE's sequence)."""

    def __post_init__(self) -> None:
        self.connection.execute(
            f"CREATE TEMPORARY TABLE {self.floors} (tbl VARCHAR, k VARCHAR, f VARCHAR, PRIMARY KEY (tbl, k))"
        )

    def drop(self) -> None:
        for held in self.tables.values():
            self.connection.execute(f"DROP TABLE IF EXISTS {held.name}")
        self.connection.execute(f"DROP TABLE IF EXISTS {self.floors}")
        self.tables.clear()

    # ------------------------------------------------------------ the start: the mirrors

    def hold(self, table: str, query: str, schema: StructType, properties: dict[str, str]) -> None:
        """Start ``table``'s copy as the rows of ``query`` (a pinned mirror's, in ``schema``'s columns)."""
        name = _name("held")
        self.connection.execute(f"CREATE TEMPORARY TABLE {name} AS {query}")
        self.tables[table] = HeldTable(name, schema, dict(properties))

    def add_floors(self, rows: Table) -> None:
        """Floors (``tbl``, ``k``, ``f``: source table, key text, sequence), each key's newest one kept: the lake's
        tombstones at the start, the keys each batch leaves deleted after."""
        with _registered(self.connection, rows) as new:
            self.connection.execute(
                f"INSERT INTO {self.floors} SELECT tbl, k, max(f) FROM {new} GROUP BY tbl, k "
                "ON CONFLICT (tbl, k) DO UPDATE SET f = greatest(f, excluded.f)"
            )

    # ------------------------------------------------------------ moving on

    def apply(self, events: Batch) -> None:
        """Apply changelog events (module doc): a table the copy does not hold yet is made by its first row
        event, as the mirror writer makes a mirror."""
        control = controls(events.control)
        for table in sorted(set(events.rows) | set(control) | set(events.descriptors)):
            self._apply(
                table,
                rows=events.rows.get(table),
                descs=events.descriptors.get(table, []),
                control=control.get(table, TableControl()),
            )

    def _apply(self, table: str, *, rows: TableRows | None, descs: list[Descriptor], control: TableControl) -> None:
        held = self.tables.get(table)
        truncated = None if held is None else held.properties.get(PROP_TRUNCATED)
        if control.truncated_at is not None and (truncated is None or control.truncated_at > truncated):
            truncated = control.truncated_at
            if held is not None:
                self._truncate(table, held, truncated)
        declared = declared_descriptors(control)
        if not descs and not declared:
            return
        planned = self._planned(table, held, descs, declared, truncated)
        if planned is None:
            return  # a TRUNCATE or DDL of a table no row event has described yet: no mirror has it either
        held, result, key = planned
        if rows is None or not len(rows):
            return
        if key:
            self._merge(table, held, rows.fold(table, result, key, truncated_at=truncated))
        else:
            self._append_keyless(held, rows, Projection(result, []), truncated)
        if held.changed > max(REWRITE_AT_LEAST, self._count(held)):
            self._rewrite(held, held.schema)

    def _planned(
        self,
        table: str,
        held: HeldTable | None,
        descs: list[Descriptor],
        declared: list[Descriptor],
        truncated: str | None,
    ) -> tuple[HeldTable, Plan, list[str]] | None:
        """The table's plan and key for its events' descriptors and those its DDL declares; its copy made (as
        the mirror writer makes a mirror: by a row event) or given the new columns and types."""
        settings = self.settings
        if held is None:
            if not descs:
                return None
            result, key, new = new_mirror(settings, table, descs + declared)
            properties = dict(new.properties)
            if truncated is not None:
                properties[PROP_TRUNCATED] = truncated
            self.hold(table, f"SELECT {select_list(new.schema, set())} WHERE false", new.schema, properties)
            return self.tables[table], result, key
        result, key, schema = planned_from(settings, table, descs + declared, (held.properties, held.schema))
        held.properties[PROP_FALLBACKS] = json.dumps(result.fallbacks)
        if schema != held.schema:
            self._rewrite(held, schema)
        return held, result, key

    # ------------------------------------------------------------ TRUNCATE, rows

    def _truncate(self, table: str, held: HeldTable, at: str) -> None:
        self.connection.execute(f"DELETE FROM {held.name} WHERE {double_quotes(ORDER_KEY)} < {sql_text(at)}")
        self.connection.execute(f"DELETE FROM {self.floors} WHERE tbl = {sql_text(table)} AND f < {sql_text(at)}")
        held.properties[PROP_TRUNCATED] = at
        held.changed += self._count(held)  # rewritten soon: the deleted rows' space back

    def _merge(self, table: str, held: HeldTable, folded: FoldedTable) -> None:
        if not len(folded.columns):
            return
        projection = folded.projection
        # Each key's floor is joined in DuckDB (the floors table, by key text), not looked up beforehand.
        source = merge_source(folded.columns, projection, [None] * len(folded.texts)).append_column(
            _KEY_TEXT, Array(folded.texts, DataType.string())
        )
        clauses = merge_clauses(
            [f.name for f in held.schema.fields],
            physical=projection.physical,
            key_index=projection.key_index,
            quote=double_quotes,
        )
        types = {double_quotes(f.name): duckdb_type(f.dataType) for f in held.schema.fields}
        updates = ", ".join(f"{c} = CAST({v} AS {types[c]})" for c, v in clauses.update.items())
        inserted = ", ".join(clauses.insert)
        values = ", ".join(f"CAST({v} AS {types[c]})" for c, v in clauses.insert.items())
        with _registered(self.connection, source) as arrow:
            with_floors = (
                f"SELECT a.* EXCLUDE ({FLOOR}, {_KEY_TEXT}), f.f AS {FLOOR} FROM {arrow} AS a "
                f"LEFT JOIN {self.floors} AS f ON f.tbl = {sql_text(table)} AND f.k = a.{_KEY_TEXT}"
            )
            found = self.connection.execute(
                f"MERGE INTO {held.name} AS t USING ({with_floors}) AS s ON {clauses.condition} "
                f"WHEN MATCHED AND s._delete AND {clauses.newer} THEN DELETE "
                f"WHEN MATCHED AND NOT s._delete AND {clauses.newer} THEN UPDATE SET {updates} "
                f"WHEN NOT MATCHED AND {clauses.inserted} THEN INSERT ({inserted}) VALUES ({values})"
            ).fetchone()
        held.changed += 0 if found is None else int(found[0])
        gone = folded.deleted()
        if gone:
            rows = Table.from_arrays(
                [Array([g[i] for g in gone], DataType.string()) for i in range(3)], names=["tbl", "k", "f"]
            )
            self.add_floors(rows)

    def _append_keyless(self, held: HeldTable, rows: TableRows, projection: Projection, truncated: str | None) -> None:
        made = rows.keyless(projection, truncated_at=truncated)
        if not len(made):
            return
        columns, names = keyless_columns(made, projection)
        types: list[SparkType] = [*projection.types, StringType(), StringType(), StringType()]
        wanted = ", ".join(
            f"CAST({double_quotes(n)} AS {duckdb_type(t)}) AS {double_quotes(n)}"
            for n, t in zip(names, types, strict=True)
        )
        origin = double_quotes(ORIGIN)
        with _registered(self.connection, Table.from_arrays(columns, names=names)) as new:
            self.connection.execute(
                f"INSERT INTO {held.name} BY NAME SELECT {wanted} FROM {new} AS n "
                f"WHERE NOT EXISTS (SELECT 1 FROM {held.name} AS h WHERE h.{origin} = n.{origin})"
            )

    # ------------------------------------------------------------ DuckDB tables

    def _count(self, held: HeldTable) -> int:
        found = self.connection.execute(f"SELECT count(*) FROM {held.name}").fetchone()
        return 0 if found is None else int(found[0])

    def _rewrite(self, held: HeldTable, schema: StructType) -> None:
        """Write the table whole in ``schema``'s columns (columns added NULL, widened ones cast)."""
        columns = select_list(schema, {f.name for f in held.schema.fields})
        name = _name("held")
        self.connection.execute(f"CREATE TEMPORARY TABLE {name} AS SELECT {columns} FROM {held.name}")
        self.connection.execute(f"DROP TABLE {held.name}")
        held.name, held.schema, held.changed = name, schema, 0


def select_list(schema: StructType, have: set[str]) -> str:
    """``schema``'s columns in their DuckDB types, from the columns named ``have`` (the others NULL)."""
    return ", ".join(
        f"CAST({double_quotes(f.name) if f.name in have else 'NULL'} AS {duckdb_type(f.dataType)}) "
        f"AS {double_quotes(f.name)}"
        for f in schema.fields
    )


def _name(what: str) -> str:
    return f"binlake_{what}_{uuid.uuid4().hex}"


class _registered:
    """An Arrow table as a view of the connection while the block runs. DuckDB reads it as a stream: once, so
    one statement reads it, once (a second scan fails)."""

    def __init__(self, connection: duckdb.DuckDBPyConnection, rows: Table) -> None:
        self._connection, self._rows, self.name = connection, rows, _name("arrow")

    def __enter__(self) -> str:
        self._connection.register(self.name, self._rows)
        return self.name

    def __exit__(self, *exc: object) -> None:
        self._connection.unregister(self.name)
