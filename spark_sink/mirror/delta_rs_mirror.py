"""A batch of changelog events applied to the mirrors and the tombstones by delta-rs (no Spark).

The twin of ``apply.apply`` for ``BINLAKE_SINK_MIRROR_WRITER=python``, with the same rules
(``merge_rules``, ``fold_rows``) and the same lake: per batch and table,

1. schema: the mirror is created by its first write (key, source table and fallbacks in its properties,
   the configured partitions), or gets the columns the batch's descriptors and ``ALTER TABLE ... ADD``
   DDL name (``plan``); a type the column does not hold goes to a fallback column ``<column>__<type>``:
   delta-rs cannot write a table with Delta's type widening, so this mirror never widens;
2. TRUNCATE: mirror rows and the table's tombstones older than it are deleted, the table remembers it
   (``binlake.truncated_at``), and row events not newer are ignored;
3. the row events are folded per key (``table_rows``: natively, or by ``fold_rows``) and MERGEd with the
   clauses of ``merge_rules`` (each column above the key's floor: the mirror row's sequence, or the key's
   tombstone); a new mirror is created holding the rows the MERGE would insert; a key-less table appends
   the origins it does not hold yet;
4. the batch's deleted keys of all tables are appended to ``deleted_keys/`` in one commit, and the table is
   compacted when its files pile up (``_compact``, as ``tombstones.compact``).

Exactly once: every commit of a batch carries the Delta transaction (app id, batch id), the TRUNCATE's
under the app id with ``.truncate``; a batch replayed after a crash skips each table whose mirror
already holds its transaction, and folds the others against the same state as before (the tombstones
are appended last, so they have not moved). Schema changes carry none: each is idempotent by value.

Kept between batches (one writer per lake, so nothing else moves these tables): each local table it opened,
moved on by the log's new commits at the next batch (``_table``; opened again when its log no longer holds
the version it knew: deleted under the writer), and the tombstones' floors (``floor_cache``); a batch that
fails drops both.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

from arro3.core import Array, DataType, Field, RecordBatch, Schema
from deltalake import CommitProperties, DeltaTable, QueryBuilder, Transaction, write_deltalake
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from pyspark.sql.types import DataType as SparkType
from pyspark.sql.types import StringType

from binlake.shared.errors import BinlakeError
from binlake.spark_sink.layout import (
    OP,
    ORDER_KEY,
    ORIGIN,
    PROP_FALLBACKS,
    PROP_TRUNCATED,
    TOMBSTONE_KEY,
    TOMBSTONE_TABLE,
)
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.mirror.apply import COMPACT_APP, TRUNCATE_APP, declared_descriptors, truncation_properties
from binlake.spark_sink.mirror.arrow_columns import array, arrow_type, delta_field, spark_schema
from binlake.spark_sink.mirror.control_events import TableControl, controls
from binlake.spark_sink.mirror.floor_cache import FloorCache
from binlake.spark_sink.mirror.fold_rows import Projection
from binlake.spark_sink.mirror.merge_rules import double_quotes, merge_clauses
from binlake.spark_sink.mirror.merge_source import keyless_columns, merge_source, sql_text
from binlake.spark_sink.mirror.plan import Descriptor, Plan, one_table_per_mirror, plan
from binlake.spark_sink.mirror.schema import new_mirror, owned_key
from binlake.spark_sink.mirror.table_rows import Batch, TableRows
from binlake.spark_sink.observe import batch_stats
from binlake.spark_sink.observe.batch_stats import BatchStats
from binlake.spark_sink.observe.steps import Step, StepClock
from binlake.spark_sink.settings import SinkSettings

log = logging.getLogger("binlake.sink.mirrors")


class MirrorWriteError(BinlakeError):
    """A mirror the writer without Spark cannot write (a table feature delta-rs lacks, tombstones it cannot read)."""


@dataclass(slots=True)
class Applied:
    """What a batch did: rows read, tables touched, keys deleted, tables skipped as already written."""

    rows: int = 0
    tables: list[str] = field(default_factory=list)
    deleted: int = 0
    skipped: list[str] = field(default_factory=list)
    stats: BatchStats = field(default_factory=BatchStats)
    """Events per (table, op) and their event times (the mirrors' freshness)."""


@dataclass(frozen=True, slots=True)
class _Table:
    """One table's mirror as the batch finds it."""

    uri: str
    delta: DeltaTable | None
    plan: Plan
    key: list[str]
    truncated_at: str | None
    new_properties: dict[str, str]
    partition_by: list[str]


def _open(uri: str) -> DeltaTable | None:
    try:
        return DeltaTable(uri)
    except TableNotFoundError:
        return None


def _still_there(uri: str, version: int) -> bool:
    """Whether the log of the table at ``uri`` still holds the commit ``version`` a kept table object is at: a
    table deleted under the writer (an operator) is opened again, not written as the object remembers it (an
    append would start a log without its first versions). A table not on this file system is always opened."""
    root = local_root(uri)
    return root is not None and (root / "_delta_log" / f"{version:020d}.json").exists()


def _commit(app_id: str, batch_id: int) -> CommitProperties:
    return CommitProperties(app_transactions=[Transaction(app_id, batch_id)])


def _done(table: DeltaTable | None, app_id: str, batch_id: int) -> bool:
    if table is None:
        return False
    version = table.transaction_version(app_id)
    return version is not None and int(version) >= batch_id


class DeltaRsMirrors:
    """The lake's mirrors and tombstones, written by delta-rs under ``app_id``."""

    def __init__(self, settings: SinkSettings, app_id: str) -> None:
        # It never widens a type (delta-rs cannot write Delta's type widening): its plans and new mirrors are
        # those of a Spark mirror with widening off (the setting must be false, ``SinkSettings``).
        self.settings = settings.model_copy(update={"type_widening": False})
        self.app_id = app_id
        self._floors = FloorCache()
        """The tombstones' floors kept from one batch to the next (``floor_cache``)."""
        self._opened: dict[str, DeltaTable] = {}
        """The tables opened so far (mirrors, tombstones), by URI (``_table``)."""
        self._checked: set[str] = set()
        """Tables known to have no tombstone table of an earlier release (``_no_legacy_tombstones``)."""

    def apply(self, events: Batch, batch_id: int, *, steps: StepClock | None = None) -> Applied:
        """Apply one batch's events (module doc); the wall time of its steps on ``steps`` (the sink's
        ``binlake_sink_batch_step_seconds``). After a batch that failed, the next reads every table and floor
        again: nothing kept from before the failure is trusted."""
        try:
            return self._apply(events, batch_id, (steps if steps is not None else StepClock()).step)
        except BaseException:
            self._opened.clear()
            self._floors.forget()
            raise

    def _table(self, uri: str) -> DeltaTable | None:
        """``uri``'s table as its log holds it now: the one opened in an earlier batch moved on by the commits
        made since (this writer's own move it in place), else opened, reading its log from the last checkpoint.
        Opening every mirror again in every batch cost a read of up to ``delta.checkpointInterval`` commits
        each."""
        held = self._opened.get(uri)
        if held is not None and _still_there(uri, held.version()):
            held.update_incremental()
            return held
        found = _open(uri)
        if found is not None:
            self._opened[uri] = found
        return found

    def _apply(self, events: Batch, batch_id: int, step: Step) -> Applied:
        settings = self.settings
        tables_of: list[str] = [c.table for c in events.control]
        ops: list[str] = [c.op for c in events.control]
        times: list[int | None] = [c.ts_ms for c in events.control]
        for table, table_rows in events.rows.items():
            table_ops, table_times = table_rows.summary()
            tables_of += [table] * len(table_ops)
            ops += table_ops
            times += table_times
        applied = Applied(rows=len(ops))
        applied.stats = batch_stats.from_values(tables_of, ops, times)
        control = controls(events.control)
        tables = sorted(set(events.rows) | set(control))
        one_table_per_mirror(settings, tables)
        tombstones_uri = settings.tombstones_uri()
        # The tombstones as the batch starts, opened once for every table's floors (``tombstones.pin``): the
        # batch's own tombstone commits come after its MERGEs.
        with step("floors"):
            pinned = self._table(tombstones_uri)
            self._floors.pin(pinned)
        deleted: list[tuple[str, str, str]] = []
        truncations: dict[str, str] = {}
        marked: list[tuple[DeltaTable, dict[str, str]]] = []
        for table in tables:
            ctl = control.get(table, TableControl())
            descs = events.descriptors.get(table, [])
            with step("mirror_schema"):
                state = self._prepare(table, descs, ctl)
            if state is None:
                continue  # a TRUNCATE or DDL of a table no row event has described yet
            with step("truncate"):
                state, fresh = self._truncate(table, state, ctl, batch_id)
            if fresh is not None:
                truncations[table] = fresh
                if state.delta is not None:  # a new mirror records it in its creation
                    marked.append((state.delta, truncation_properties(fresh, ctl.truncated_ts_ms)))
            applied.tables.append(table)
            rows = events.rows.get(table)
            if rows is None or not len(rows):
                continue
            done = _done(state.delta, self.app_id, batch_id)
            if done:
                applied.skipped.append(table)
            if not state.key:
                if not done:
                    with step("append_keyless"):
                        self._append_keyless(state, rows, batch_id)
                continue
            # Folded even when written already (a replay): its deleted keys go to the tombstones below.
            deleted += self._merge(table, state, rows, batch_id, write=not done, step=step)
        if truncations:
            with step("truncate"):
                if self._truncate_tombstones(tombstones_uri, truncations, batch_id):
                    self._floors.forget()
                # Last: a crash before these replays the TRUNCATEs' deletes (skipped by their transactions) and
                # comes here again (a mirror whose mark is set would not apply its TRUNCATE again).
                for mirror, marks in marked:
                    mirror.alter.set_table_properties(marks, raise_if_not_exists=False)
        with step("tombstones_append"):
            recorded = self._record(tombstones_uri, deleted, batch_id)
        with step("tombstones_compact"):
            compacted = self._compact(tombstones_uri, batch_id)
        commits = [v for v in (recorded, compacted) if v is not None]
        if commits:
            self._floors.committed(deleted, commits=len(commits), version=commits[-1])
        applied.deleted = len(deleted)
        return applied

    # ------------------------------------------------------------ schema

    def _no_legacy_tombstones(self, table: str) -> None:
        """Refuse a table with a tombstone table of a release before ``deleted_keys/``: its floors are not read
        here (``tombstones.floors`` reads them), so a late event could bring back a row deleted then."""
        if table in self._checked:
            return
        legacy = self.settings.legacy_tombstones_uri(table)
        if DeltaTable.is_deltatable(legacy):
            raise MirrorWriteError(
                f"{table} has tombstones of an earlier release at {legacy}, which the mirror writer without Spark "
                "does not read: keep BINLAKE_SINK_MIRROR_WRITER=spark for this lake"
            )
        self._checked.add(table)

    def _prepare(self, table: str, descs: list[Descriptor], ctl: TableControl) -> _Table | None:
        settings = self.settings
        self._no_legacy_tombstones(table)
        uri = settings.mirror_uri(table)
        every = descs + declared_descriptors(ctl)
        found = self._table(uri)
        if found is None:
            if not descs:
                return None
            # The Spark mirror's new mirror (key, properties, partitions), its columns in the table's order.
            result, key, new = new_mirror(settings, table, every)
            missing = [k for k in key if k not in result.types]
            if missing:
                raise MirrorWriteError(f"{table}: key columns {missing} are not described by its events")
            result.types = {f.name: result.types[f.name] for f in new.schema.fields if f.name in result.types}
            return _Table(uri, None, result, key, None, new.properties, new.partition_by)
        self._writable(found, uri)
        props = found.metadata().configuration
        key, fallbacks = owned_key(settings, table, props, every)
        existing = {f.name: f.dataType for f in spark_schema(found.schema()).fields}
        result = plan(existing, fallbacks, every, widening=False)
        added: list[tuple[str, SparkType]] = [(name, result.types[name]) for name in result.added]
        if not key and ORIGIN not in existing:
            added.append((ORIGIN, StringType()))
        if added:
            found.alter.add_columns([delta_field(name, t) for name, t in added])
        if result.fallbacks != fallbacks:
            found.alter.set_table_properties({PROP_FALLBACKS: json.dumps(result.fallbacks)}, raise_if_not_exists=False)
        if descs:
            missing = [k for k in key if k not in result.types]
            if missing:
                raise MirrorWriteError(f"{table}: key columns {missing} are not described by its events")
        return _Table(uri, found, result, key, props.get(PROP_TRUNCATED), {}, [])

    @staticmethod
    def _writable(table: DeltaTable, uri: str) -> None:
        features = set(table.protocol().writer_features or [])
        if "typeWidening" in features or "typeWidening-preview" in features:
            raise MirrorWriteError(
                f"the mirror {uri} has Delta's type widening on (the Spark mirror made it with "
                "BINLAKE_SINK_TYPE_WIDENING=true), which delta-rs cannot write: keep BINLAKE_SINK_MIRROR_WRITER=spark "
                "for this lake, or rebuild its mirrors with the writer without Spark"
            )

    # ------------------------------------------------------------ TRUNCATE

    def _truncate(self, table: str, state: _Table, ctl: TableControl, batch_id: int) -> tuple[_Table, str | None]:
        """Apply the batch's TRUNCATE when newer than the mirror's; return the state and the TRUNCATE's
        sequence when it is new (its tombstones are deleted with the other tables', ``_truncate_tombstones``)."""
        wanted = ctl.truncated_at
        previous = state.truncated_at
        if wanted is None or (previous is not None and wanted <= previous):
            return state, None
        if state.delta is None:
            props = {**state.new_properties, **truncation_properties(wanted, ctl.truncated_ts_ms)}
            return _Table(state.uri, None, state.plan, state.key, wanted, props, state.partition_by), wanted
        app = self.app_id + TRUNCATE_APP
        if not _done(state.delta, app, batch_id):
            state.delta.delete(
                f"{double_quotes(ORDER_KEY)} < {sql_text(wanted)}", commit_properties=_commit(app, batch_id)
            )
        return _Table(state.uri, state.delta, state.plan, state.key, wanted, {}, []), wanted

    def _truncate_tombstones(self, uri: str, truncations: dict[str, str], batch_id: int) -> bool:
        """Delete the truncated tables' floors older than their TRUNCATE; return whether this committed."""
        found = self._table(uri)
        app = self.app_id + TRUNCATE_APP
        if found is None or _done(found, app, batch_id):
            return False
        older = " OR ".join(
            f"({double_quotes(TOMBSTONE_TABLE)} = {sql_text(t)} AND {double_quotes(ORDER_KEY)} < {sql_text(at)})"
            for t, at in sorted(truncations.items())
        )
        found.delete(older, commit_properties=_commit(app, batch_id))
        return True

    # ------------------------------------------------------------ rows

    def _merge(
        self,
        table: str,
        state: _Table,
        rows: TableRows,
        batch_id: int,
        *,
        write: bool = True,
        step: Step,
    ) -> list[tuple[str, str, str]]:
        """Fold and MERGE a keyed table's row events (``write`` False: only fold) above their floors in the
        pinned tombstones (``_floors``); return its deleted keys as tombstone rows."""
        with step("fold"):
            table_fold = rows.fold(table, state.plan, state.key, truncated_at=state.truncated_at)
        projection, texts = table_fold.projection, table_fold.texts
        gone = table_fold.deleted()
        if not len(table_fold.columns) or not write:
            return gone
        mirror = state.delta if state.delta is not None else self._create(state, projection.types, keyless=False)
        if not mirror.file_uris():
            # A new mirror (or one a crash left empty after its creation): the MERGE could only insert.
            with step("floors"):
                floors = self._floors.floors(table, texts)
            values, seqs = table_fold.inserted(floors)
            columns = [array(v, t) for v, t in zip(values, projection.types, strict=True)]
            columns.append(Array(seqs, DataType.string()))
            batch = RecordBatch.from_arrays(columns, names=[*projection.physical, ORDER_KEY])
            with step("append"):
                write_deltalake(mirror, batch, mode="append", commit_properties=_commit(self.app_id, batch_id))
            return gone
        with step("floors"):
            source = merge_source(table_fold.columns, projection, self._floors.floors(table, texts))
        target = [f.name for f in spark_schema(mirror.schema()).fields]
        clauses = merge_clauses(
            target, physical=projection.physical, key_index=projection.key_index, quote=double_quotes
        )
        with step("merge"):
            (
                mirror.merge(
                    source,
                    clauses.condition,
                    source_alias="s",
                    target_alias="t",
                    commit_properties=_commit(self.app_id, batch_id),
                )
                .when_matched_delete(predicate=f"s._delete AND {clauses.newer}")
                .when_matched_update(updates=clauses.update, predicate=f"NOT s._delete AND {clauses.newer}")
                .when_not_matched_insert(updates=clauses.insert, predicate=clauses.inserted)
                .execute()
            )
        return gone

    def _create(self, state: _Table, types: list[SparkType], *, keyless: bool) -> DeltaTable:
        """Create a mirror (no rows yet) with its properties, one commit without a transaction: a batch replayed
        after it finds the mirror there, empty, and writes its rows as to any mirror."""
        fields = [Field(name, arrow_type(t), True) for name, t in zip(state.plan.types, types, strict=True)]
        fields.append(Field(ORDER_KEY, DataType.string(), True))
        if keyless:
            fields += [Field(OP, DataType.string(), True), Field(ORIGIN, DataType.string(), True)]
        try:
            created = DeltaTable.create(
                state.uri,
                Schema(fields),
                mode="ignore",
                partition_by=state.partition_by or None,
                configuration=state.new_properties,
                raise_if_key_not_exists=False,
            )
        except (CommitFailedError, DeltaError) as exc:
            raise MirrorWriteError(f"creating the mirror {state.uri} failed: {exc}") from exc
        self._opened[state.uri] = created
        return created

    def _append_keyless(self, state: _Table, rows: TableRows, batch_id: int) -> None:
        projection = Projection(state.plan, [])
        made = rows.keyless(projection, truncated_at=state.truncated_at)
        if state.delta is not None and len(made):
            held = self._held_origins(state.delta, min(made.origin), max(made.origin))
            made = made.without(held)
        if not len(made):
            return
        columns, names = keyless_columns(made, projection)
        mirror = state.delta
        if mirror is None:
            mirror = self._create(state, projection.types, keyless=True)
        target = spark_schema(mirror.schema())
        have = dict(zip(names, columns, strict=True))
        full = [have[f.name] if f.name in have else array([None] * len(made), f.dataType) for f in target.fields]
        write_deltalake(
            mirror,
            RecordBatch.from_arrays(full, names=[f.name for f in target.fields]),
            mode="append",
            commit_properties=_commit(self.app_id, batch_id),
        )

    @staticmethod
    def _held_origins(table: DeltaTable, low: str, high: str) -> set[str]:
        column = double_quotes(ORIGIN)
        reader = (
            QueryBuilder()
            .register("m", table)
            .execute(f"SELECT {column} AS o FROM m WHERE {column} BETWEEN {sql_text(low)} AND {sql_text(high)}")
        )
        return {v for batch in reader.read_all().to_batches() for v in batch.column("o").to_pylist()}

    # ------------------------------------------------------------ tombstones

    def _compact(self, uri: str, batch_id: int) -> int | None:
        """Rewrite the tombstone table as one row per deleted key (its newest delete), one commit under the app id
        with ``.compact``, when it holds more than ``tombstone_compact_files`` files beyond one per source table
        (``tombstones.compact``: the floors read the same values before and after); return the version this
        committed (None: no commit)."""
        found = self._table(uri)
        if found is None:
            return None
        files = len(found.file_uris())
        tables = len(found.partitions())
        if files <= self.settings.tombstone_compact_files or files - tables <= self.settings.tombstone_compact_files:
            return None
        app = self.app_id + COMPACT_APP
        if _done(found, app, batch_id):
            return None
        newest = _compact_query(found).read_all()
        write_deltalake(
            found, newest, mode="overwrite", partition_by=[TOMBSTONE_TABLE], commit_properties=_commit(app, batch_id)
        )
        return found.version()

    def _record(self, uri: str, deleted: list[tuple[str, str, str]], batch_id: int) -> int | None:
        """Append the batch's deleted keys to the tombstone table; return the version this committed (None: no
        commit, nothing deleted or a replay of a batch that made it)."""
        if not deleted:
            return None
        found = self._table(uri)
        if _done(found, self.app_id, batch_id):
            return None
        batch = RecordBatch.from_arrays(
            [Array([d[i] for d in deleted], DataType.string()) for i in range(3)],
            names=[TOMBSTONE_TABLE, TOMBSTONE_KEY, ORDER_KEY],
        )
        write_deltalake(
            found if found is not None else uri,
            batch,
            mode="append",
            partition_by=None if found is not None else [TOMBSTONE_TABLE],
            commit_properties=_commit(self.app_id, batch_id),
        )
        return found.version() if found is not None else 0  # a table this append made is at its first version


def _compact_query(table: DeltaTable) -> Any:
    names = [double_quotes(n) for n in (TOMBSTONE_TABLE, TOMBSTONE_KEY)]
    return (
        QueryBuilder()
        .register("d", table)
        .execute(
            f"SELECT {names[0]} AS {names[0]}, {names[1]} AS {names[1]}, max({double_quotes(ORDER_KEY)}) AS "
            f"{double_quotes(ORDER_KEY)} FROM d GROUP BY {names[0]}, {names[1]}"
        )
    )
