"""Current-state reads without Spark: ``current_state``'s merge on read, computed by DuckDB and kept.

    current = mirror  (+)  fold(the changelog's tail past the mirror checkpoint)

as ``current_state`` computes it in Spark, with the same rules and a fraction of the cost (no JVM, no
Spark jobs). The first read of a set of tables computes it from the mirrors; the reader then keeps its
result (``current_held``: each table's rows and its deleted keys' floors, in DuckDB tables of its own) and
every later read of the same tables applies only the changelog versions committed since the read before:
a read costs what changed, not the tail past the mirrors, and reads no mirror.

The first read is consistent while the mirror writer runs, because it reads in this order:

1. the checkpoint's progress ``P`` (``current_state.applied_by``: the changelog versions every mirror holds
   in full, whichever mirror writer made them);
2. each mirror's version, pinned for the read (the mirror holds at least ``P``) and copied;
3. the changelog's newest version ``V``, then its versions after ``P`` up to ``V`` (every batch a pinned
   mirror holds began before, so its events are in ``P`` or in these);
4. the tombstones (every key ``P``'s batches deleted): the floors of the keys the mirrors do not hold.

An event both in the tail and in a mirror changes nothing (the key's floor), and a key a pinned mirror
deleted keeps its DELETE in the tail or its floor from 4, so an older event cannot bring it back. The tail's
events are read by delta-rs and folded per key in the native fast lane (``table_rows``: the mirror writer
without Spark's own fold); DuckDB's delta extension reads the mirrors (Spark's type-widened ones as well).

The reader starts again from the mirrors when the tables asked for change, when the changelog is another
table (its id) or its versions since the last read are no longer in its change data feed (they are then
read from the table as of ``V``: the floors keep what the copy holds), when a read fails halfway, and on
every read of a lake whose mirrors the changelog query writes (``BINLAKE_SINK_MIRRORS=inline``: the
mirrors are the current state).

The results are DuckDB relations on the reader's connection (``CurrentStates``): query them with SQL,
fetch them, or read them as Arrow (``arro3.core.Table.from_arrow``); they stay valid until the next read
or ``close``. Only a lake on this machine's file system is read (as ``binlake lake show`` reads it).
"""

from __future__ import annotations

import threading
import uuid
from dataclasses import dataclass

import duckdb
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from pyspark.sql.types import StructType

from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.lake.native import duckdb_connection
from binlake.spark_sink.layout import ORDER_KEY, PROP_TRUNCATED
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.mirror import follower
from binlake.spark_sink.mirror.arrow_columns import spark_schema
from binlake.spark_sink.mirror.current_held import HeldTables, duckdb_type, select_list
from binlake.spark_sink.mirror.merge_rules import double_quotes
from binlake.spark_sink.mirror.merge_source import floor_rows, sql_text
from binlake.spark_sink.settings import SinkSettings

__all__ = ["CurrentStates", "duckdb_type"]


@dataclass(frozen=True, slots=True)
class _Kept:
    """What the reader keeps between reads: the copy, of which tables, and of which changelog."""

    held: HeldTables
    tables: tuple[str, ...]
    changelog_id: str


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
        self._lock = threading.Lock()
        self._kept: _Kept | None = None
        self.through = -1
        """The newest changelog version the last read holds (its events and every one before), -1 before one."""
        self.started_again = 0
        """Reads that started from the mirrors (the first one included); the others applied new versions only."""

    def close(self) -> None:
        with self._lock:
            self._forget()
            self._connection.close()

    def read(self, tables: list[str]) -> dict[str, duckdb.DuckDBPyRelation]:
        """Source tables ``tables`` as the changelog holds them now: each mirror's columns (hidden ones
        included), one row per key (per row event without a key). A table the lake holds nothing of yet is
        left out."""
        with self._lock:
            try:
                kept = self._moved_on(tables)
            except BaseException:
                self._forget()  # a copy a read left halfway is not kept
                raise
            return {table: self._connection.table(held.name) for table, held in kept.held.tables.items()}

    def _moved_on(self, tables: list[str]) -> _Kept:
        changelog = _open(self.settings.changelog_uri())
        kept = self._kept
        wanted = tuple(sorted(set(tables)))
        if (
            kept is None
            or changelog is None
            or self.settings.mirrors == "inline"
            or kept.tables != wanted
            or kept.changelog_id != str(changelog.metadata().id)
            or changelog.version() < self.through
        ):
            return self._started(wanted)
        last = changelog.version()
        if last > self.through:
            kept.held.apply(follower.read_range(changelog, self.through + 1, last, only=set(wanted)))
            self.through = last
        return kept

    def _started(self, tables: tuple[str, ...]) -> _Kept:
        """A copy made from the mirrors and the tail past them (module doc's order)."""
        self._forget()
        settings = self.settings
        self.started_again += 1
        progress = follower.Progress(settings.mirror_checkpoint())
        committed, _ = progress.state()
        after = -1 if committed is None else progress.next_version(committed) - 1
        held = HeldTables(self._connection, settings)
        kept = _Kept(held, tables, "")
        self._kept = kept
        for table in tables:
            self._copy(held, table)
        changelog = _open(settings.changelog_uri())
        self.through = after if changelog is None else max(after, changelog.version())
        if settings.mirrors == "inline":
            after = self.through  # the changelog query applies each batch to the mirrors: no tail
        tail = None
        if self.through > after and changelog is not None:
            tail = follower.read_range(changelog, after + 1, self.through, only=set(tables))
        if settings.mirrors != "inline":  # the floors of the keys the mirrors deleted: for this tail and the next
            held.add_floors(floor_rows(_open(settings.tombstones_uri()), list(tables)))
        if tail is not None:
            held.apply(tail)
        self._kept = _Kept(held, tables, "" if changelog is None else str(changelog.metadata().id))
        return self._kept

    def _copy(self, held: HeldTables, table: str) -> None:
        """Copy ``table``'s mirror (pinned at the version found) into the copy, if it has one."""
        settings = self.settings
        legacy = settings.legacy_tombstones_uri(table)
        if DeltaTable.is_deltatable(legacy):
            raise LakeError(
                f"{table} has tombstones of an earlier release at {legacy}, which the current-state read without "
                "Spark does not read: read it with Spark (spark_sink.mirror.current_state)"
            )
        uri = settings.mirror_uri(table)
        found = _open(uri)
        if found is None:
            return
        path = local_root(uri)
        assert path is not None  # the lake is local (checked when made)
        name = f"binlake_mirror_{uuid.uuid4().hex}"
        properties = found.metadata().configuration
        schema = spark_schema(found.schema())
        self._connection.execute(f"ATTACH {sql_text(str(path))} AS {name} (TYPE delta, VERSION {found.version()})")
        try:
            held.hold(table, _rows(name, schema, properties.get(PROP_TRUNCATED)), schema, properties)
        finally:
            self._connection.execute(f"DETACH {name}")

    def _forget(self) -> None:
        if self._kept is not None:
            self._kept.held.drop()
            self._kept = None


def _rows(mirror: str, schema: StructType, truncated: str | None) -> str:
    """The query of an attached mirror's rows in its columns' DuckDB types, none older than its TRUNCATE."""
    where = "" if truncated is None else f" WHERE {double_quotes(ORDER_KEY)} >= {sql_text(truncated)}"
    return f"SELECT {select_list(schema, {f.name for f in schema.fields})} FROM {mirror}{where}"


def _open(uri: str) -> DeltaTable | None:
    try:
        return DeltaTable(uri)
    except TableNotFoundError:
        return None
