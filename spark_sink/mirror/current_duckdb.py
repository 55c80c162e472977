"""Current-state reads without Spark: ``current_state``'s merge on read, computed by DuckDB.

    current = mirror  (+)  fold(the changelog's tail past the mirror checkpoint)

as ``current_state`` computes it in Spark, with the same rules and a fraction of the cost (no JVM, no
Spark jobs): the mirror checkpoint's progress (``current_state.applied_by``: either mirror writer's),
the tail's events read by delta-rs and folded per key in the native fast lane (``follower.TailBodies``:
the versions the reader's previous read read are not read again; ``table_rows``: the mirror writer without
Spark's own fold), each key's floor from the
tombstones, and the combination with the mirror as the MERGE's clauses evaluated as a full outer join
(``merge_rules.merged_read``). DuckDB's delta extension scans the mirrors (it reads Spark's type-widened
mirrors as well).

A read is consistent while the mirror writer runs, because it reads in this order:

1. the checkpoint's progress ``P`` (the changelog versions every mirror holds in full);
2. each mirror's version, pinned for the read (the mirror holds at least ``P``);
3. the changelog's tail after ``P`` up to its newest version (read after 2: every batch a pinned mirror
   holds began before, so its events are in ``P`` or in the tail);
4. the tombstones (every key ``P``'s batches deleted).

An event both in the tail and in the mirror changes nothing (the key's floor), and a key a pinned mirror
deleted keeps its DELETE in the tail or its tombstone in 4, so an older event cannot bring it back.

The results are DuckDB relations on the reader's connection (``CurrentStates``): query them with SQL,
fetch them, or read them as Arrow (``arro3.core.Table.from_arrow``); they stay valid until the next read
or ``close``. Only a lake on this machine's file system is read (as ``binlake lake show`` reads it).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass
from typing import Final

import duckdb
from arro3.core import Table
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from pyspark.sql.types import (
    BinaryType,
    DecimalType,
    StringType,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark.sql.types import DataType as SparkType

from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.lake.native import duckdb_connection
from binlake.spark_sink.layout import ORDER_KEY, ORIGIN, PROP_TRUNCATED
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.mirror import follower
from binlake.spark_sink.mirror.apply import declared_descriptors
from binlake.spark_sink.mirror.arrow_columns import spark_schema
from binlake.spark_sink.mirror.control_events import TableControl, controls
from binlake.spark_sink.mirror.fold_rows import Projection
from binlake.spark_sink.mirror.merge_rules import double_quotes, merged_read
from binlake.spark_sink.mirror.merge_source import keyless_columns, sql_text
from binlake.spark_sink.mirror.plan import Descriptor
from binlake.spark_sink.mirror.schema import planned_from
from binlake.spark_sink.mirror.table_rows import Batch, TableRows
from binlake.spark_sink.settings import SinkSettings

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


@dataclass(frozen=True, slots=True)
class _Mirror:
    """A mirror as the read pins it: its DuckDB name (attached at the version the read found), properties and
    columns at that version."""

    name: str | None
    """None: no mirror yet."""
    properties: dict[str, str]
    schema: StructType


class CurrentStates:
    """Current-state reads of one local lake on a DuckDB connection of their own (module doc)."""

    def __init__(self, settings: SinkSettings) -> None:
        for what, uri in (("lake", settings.lake()), ("mirror checkpoint", settings.mirror_checkpoint())):
            if local_root(uri) is None:
                raise LakeError(
                    f"the {what} {uri} is not on this machine's file system: the current-state read without Spark "
                    "reads a local lake (a path or file:// URI)"
                )
        self.settings = settings
        self._connection: duckdb.DuckDBPyConnection = duckdb_connection()
        self._connection.execute("SET enable_progress_bar = false")
        self._connection.execute("SET TimeZone = 'UTC'")  # TIMESTAMP WITH TIME ZONE values come back in UTC
        self._release_sql: list[str] = []
        """What the last read attached (mirrors) and made (temporary tables): released by the next."""
        self._lock = threading.Lock()
        self.through = -1
        """The newest changelog version the last read holds (its events and every one before), -1 before one."""
        self._tail = follower.TailBodies()

    def close(self) -> None:
        with self._lock:
            self._connection.close()

    def read(self, tables: list[str]) -> dict[str, duckdb.DuckDBPyRelation]:
        """Source tables ``tables`` as the changelog holds them now: each mirror's columns (hidden ones
        included), one row per key (per row event without a key). A table the lake holds nothing of yet is
        left out."""
        with self._lock:
            self._release()
            settings = self.settings
            progress = follower.Progress(settings.mirror_checkpoint())
            committed, _ = progress.state()
            after = -1 if committed is None else progress.next_version(committed) - 1
            mirrors = {table: self._pin(table) for table in tables}
            changelog = _open(settings.changelog_uri())
            events = Batch({}, [], {})
            self.through = after if changelog is None else max(after, changelog.version())
            if settings.mirrors == "inline":
                after = self.through  # the changelog query applies each batch to the mirrors: no tail
            if self.through > after and changelog is not None:
                events = self._tail.read(changelog, after + 1, self.through, only=set(tables))
            tombstones = _open(settings.tombstones_uri())
            control = controls(events.control)
            out: dict[str, duckdb.DuckDBPyRelation] = {}
            for table in tables:
                found = self._current(
                    table,
                    mirrors[table],
                    rows=events.rows.get(table),
                    descs=events.descriptors.get(table, []),
                    control=control.get(table, TableControl()),
                    tombstones=tombstones,
                )
                if found is not None:
                    out[table] = found
            return out

    # ------------------------------------------------------------ one table

    def _current(
        self,
        table: str,
        mirror: _Mirror,
        *,
        rows: TableRows | None,
        descs: list[Descriptor],
        control: TableControl,
        tombstones: DeltaTable | None,
    ) -> duckdb.DuckDBPyRelation | None:
        settings = self.settings
        legacy = settings.legacy_tombstones_uri(table)
        if DeltaTable.is_deltatable(legacy):
            raise LakeError(
                f"{table} has tombstones of an earlier release at {legacy}, which the current-state read without "
                "Spark does not read: read it with Spark (spark_sink.mirror.current_state)"
            )
        truncated = mirror.properties.get(PROP_TRUNCATED)
        if control.truncated_at is not None and (truncated is None or control.truncated_at > truncated):
            truncated = control.truncated_at
        declared = declared_descriptors(control)
        if not descs and not declared:
            if mirror.name is None:
                return None
            return self._connection.sql(self._held(mirror, mirror.schema, truncated))
        found = None if mirror.name is None else (mirror.properties, mirror.schema)
        result, key, schema = planned_from(settings, table, descs + declared, found)
        held = self._held(mirror, schema, truncated)
        if rows is None or not len(rows):
            return self._connection.sql(held)  # the tail only declares columns (or truncates): nothing to fold
        if not key:
            return self._keyless(held, Projection(result, []), rows, truncated)
        table_fold = rows.fold(table, result, key, truncated_at=truncated)
        source = self._table(table_fold.source(tombstones))
        physical = table_fold.projection.physical
        read = merged_read(
            [(f.name, duckdb_type(f.dataType)) for f in schema.fields],
            physical=physical,
            key_index=table_fold.projection.key_index,
            quote=double_quotes,
        )
        return self._connection.sql(
            f"SELECT {', '.join(read.columns)} FROM ({held}) AS t "
            f"FULL OUTER JOIN {source} AS s ON {read.condition} WHERE {read.keep}"
        )

    @staticmethod
    def _held(mirror: _Mirror, schema: StructType, truncated: str | None) -> str:
        """The query of the pinned mirror's rows in ``schema``'s columns (added ones NULL, widened ones cast),
        none older than its TRUNCATE."""
        have = {f.name for f in mirror.schema.fields}
        columns = ", ".join(
            f"CAST({double_quotes(f.name) if f.name in have and mirror.name is not None else 'NULL'} "
            f"AS {duckdb_type(f.dataType)}) AS {double_quotes(f.name)}"
            for f in schema.fields
        )
        if mirror.name is None:
            return f"SELECT {columns} WHERE false"
        where = "" if truncated is None else f" WHERE {double_quotes(ORDER_KEY)} >= {sql_text(truncated)}"
        return f"SELECT {columns} FROM {mirror.name}{where}"

    def _keyless(
        self, held: str, projection: Projection, rows: TableRows, truncated: str | None
    ) -> duckdb.DuckDBPyRelation:
        """A key-less table: the mirror's rows plus the tail's events whose origin it does not hold."""
        made = rows.keyless(projection, truncated_at=truncated)
        columns, names = keyless_columns(made, projection)
        new = self._table(Table.from_arrays(columns, names=names))
        origin = double_quotes(ORIGIN)
        wanted = ", ".join(
            f"CAST({double_quotes(name)} AS {duckdb_type(t)}) AS {double_quotes(name)}"
            for name, t in zip(names, [*projection.types, StringType(), StringType(), StringType()], strict=True)
        )
        return self._connection.sql(
            f"SELECT * FROM ({held}) UNION ALL BY NAME SELECT {wanted} FROM {new} AS n "
            f"WHERE NOT EXISTS (SELECT 1 FROM ({held}) AS h WHERE h.{origin} = n.{origin})"
        )

    # ------------------------------------------------------------ the read's DuckDB objects

    def _pin(self, table: str) -> _Mirror:
        uri = self.settings.mirror_uri(table)
        found = _open(uri)
        if found is None:
            return _Mirror(None, {}, StructType([]))
        name = f"binlake_mirror_{uuid.uuid4().hex}"
        path = local_root(uri)
        assert path is not None  # the lake is local (checked when made)
        self._connection.execute(f"ATTACH {sql_text(str(path))} AS {name} (TYPE delta, VERSION {found.version()})")
        self._release_sql.append(f"DETACH {name}")
        return _Mirror(name, found.metadata().configuration, spark_schema(found.schema()))

    def _table(self, rows: Table) -> str:
        """``rows`` as a temporary table of the read (an Arrow stream is read once; a table as often as asked)."""
        name = f"binlake_rows_{uuid.uuid4().hex}"
        view = f"{name}_arrow"
        self._connection.register(view, rows)
        self._connection.execute(f"CREATE TEMPORARY TABLE {name} AS SELECT * FROM {view}")
        self._connection.unregister(view)
        self._release_sql.append(f"DROP TABLE {name}")
        return name

    def _release(self) -> None:
        for statement in reversed(self._release_sql):
            self._connection.execute(statement)
        self._release_sql.clear()


def _open(uri: str) -> DeltaTable | None:
    try:
        return DeltaTable(uri)
    except TableNotFoundError:
        return None
