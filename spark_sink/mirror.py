"""Mirror (silver) tables: one Delta table per source table, kept equal to the source.

Per micro-batch and table, in this order (each step commits under the sink's
Delta transaction id for this batch, so a replay after a crash skips the steps
already committed):

1. schema: create or evolve the mirror (``mirror_schema``), including columns
   an ``ALTER TABLE ... ADD`` DDL event declares (``control_events``); a new
   mirror is created by its first write in step 4 (one commit, not a creation
   and a write: a commit costs a table about half a second of driver time);
2. TRUNCATE: delete rows (and the table's tombstones) older than it,
   remember it in ``binlake.truncated_at`` and ignore row events not newer
   than it from then on;
3. row events not newer than their key's *floor* (the mirror row's or the
   tombstone's sequence, see ``tombstones``) are ignored: an old event
   never overwrites newer state, and never resurrects a deleted row;
4. the rest are folded per primary key in sequence order: a key whose
   last event is a DELETE is deleted; otherwise each column takes its value
   from the last event that knows it (absent from the image = unknown =
   untouched), and columns of a row deleted earlier in the same batch restart
   from NULL; an UPDATE that changes the key deletes the old key. The result
   is MERGEd into the mirror (appended when the mirror holds none of its keys:
   an initial load, an insert-only table; asked only of a batch of INSERTs,
   since one that updates or deletes finds its keys held).
   Steps 3-4 are one aggregation and one MERGE per table: the fold does not
   read the mirror, and the MERGE applies the floor column by column (``_fold``).
   The batch's keyed tables with few rows (``mirror_shared_fold_rows``) and
   no history share one aggregation instead (``mirror_fold``): a fold of its
   own costs a table seconds of fixed Spark work, however few its rows;
5. history (SCD2) tables, for the tables that ask for one (``history``);
6. once every table is written, the deleted keys of all of them are
   appended to the lake's one tombstone table, in one commit (``tombstones``).

Step 1 of all the batch's tables runs on a thread pool (``table_parallelism``),
then step 2 table by table (its commits carry a transaction id of their own,
a session setting; the tombstones' part in one commit for all tables), then
steps 3-5 of all tables on the pool again, then step 6: Spark
schedules their jobs side by side, and each table is its own Delta table with
its own log, so they do not conflict. They all commit under the batch's one
transaction id, set once for the session around them
(``delta_tables.idempotent_dml``).

Order everywhere is the *sequence* (``spark_sink.order``): ``order_key``, then
the event's origin, a total order that agrees with the source; the hidden
column ``_binlake_order_key`` holds it.

Tables without a primary key are append-only: each row event is appended with
``_binlake_op``, ``_binlake_order_key`` and ``_binlake_origin`` (the event's
origin), once: a row whose origin the mirror already holds is not appended
again, so a replay under a new checkpoint does not double the table.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import Final, TypeVar

from delta.tables import DeltaTable
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F

from shared.event.model import ROW_OPS
from spark_sink import changelog, delta_tables, history, mirror_fold, tombstones
from spark_sink.control_events import TableControl, Truncation, collect
from spark_sink.delta_tables import quote, release
from spark_sink.mirror_fold import FoldTable
from spark_sink.mirror_plan import OP, ORDER_KEY, ORIGIN, ColumnDesc, Descriptor, Plan
from spark_sink.mirror_project import (
    DESC,
    IMAGE,
    IS_DELETE,
    LAST_DELETE,
    project,
    project_with_moves,
    with_descriptor_id,
)
from spark_sink.mirror_schema import SHARED_NAME_HINT, NewMirror, partition_columns, prepare
from spark_sink.order import origin_sql, sequence
from spark_sink.settings import SinkSettings
from spark_sink.source import decoded_event
from spark_sink.typemap import convert, sql_string

PROP_TRUNCATED: Final = "binlake.truncated_at"
PROP_TRUNCATED_TS: Final = "binlake.truncated_ts_ms"
"""That TRUNCATE's ``ts_ms`` (empty when it had none): a history version of a late event closes then."""
TRUNCATE_APP: Final = ".truncate"
"""Suffix of the transaction app id of a TRUNCATE's deletes: a second commit to the same table in one batch."""
COMPACT_APP: Final = ".compact"
"""Suffix of the transaction app id of the tombstone table's compaction (``tombstones.compact``)."""
SCHEDULER_POOL: Final = "spark.scheduler.pool"
_Item = TypeVar("_Item")
_Done = TypeVar("_Done")
_DDL_DESCRIPTOR: Final = 0
_IS_DELETE_SQL: Final = "op = 'DELETE'"


@dataclass(frozen=True, slots=True)
class RowCounts:
    """A table's row events in the batch: all of them, and those that are not INSERTs."""

    rows: int = 0
    changes: int = 0
    """UPDATEs and DELETEs: a batch with any is MERGEd without first asking whether the mirror holds its keys."""


def descriptors(rows: DataFrame) -> tuple[dict[str, list[Descriptor]], dict[str, RowCounts]]:
    """Each source table's distinct column descriptors in the batch's row events (a handful: collected),
    and its numbers of row events."""
    found: dict[str, list[Descriptor]] = {}
    counts: dict[str, RowCounts] = {}
    if changelog.BODY in rows.columns:
        # A version-2 changelog: only the descriptors are decoded (Avro skips the images without building
        # them); each table's images are decoded later, once: by its own projection or by the shared fold.
        rows = rows.withColumn("columns", decoded_event(changelog.BODY, only=frozenset({"columns"}))["columns"])
    distinct = (
        with_descriptor_id(rows)
        .groupBy("source_table", DESC)
        .agg(
            F.first("columns").alias("columns"),
            F.first("primary_key").alias("primary_key"),
            F.count("*").alias("n"),
            F.count_if(F.col("op") != "INSERT").alias("changes"),
        )
    )
    for row in distinct.collect():
        seen = counts.get(row["source_table"], RowCounts())
        counts[row["source_table"]] = RowCounts(seen.rows + int(row["n"]), seen.changes + int(row["changes"]))
        columns = tuple(
            ColumnDesc(c["name"], c["logical_type"], c["precision"], c["scale"]) for c in row["columns"] or []
        )
        found.setdefault(row["source_table"], []).append(
            Descriptor(int(row[DESC]), columns, tuple(row["primary_key"] or []))
        )
    for values in found.values():
        values.sort(key=lambda d: d.desc_id)
    return found, counts


Step = Callable[[str], AbstractContextManager[None]]
"""Times a named step of the batch (``StepClock.step``)."""


def apply(
    spark: SparkSession, settings: SinkSettings, rows: DataFrame, app_id: str, batch_id: int, *, step: Step
) -> list[str]:
    """Apply a batch's new changelog rows to the mirrors; return the tables touched.

    Schema changes first (tables side by side), then TRUNCATEs one table after
    the other (commits under the TRUNCATE's own transaction id); then the row
    events of all tables are MERGEd concurrently (``table_parallelism``), every
    commit under the batch's one transaction id.
    """
    with step("control_events"):
        control = collect(rows)
    row_events = rows.where(F.col("op").isin(sorted(ROW_OPS)))
    with step("descriptors"):
        tables, row_counts = descriptors(row_events)
    candidates: list[tuple[str, list[Descriptor], TableControl]] = []
    for table in sorted(set(tables) | set(control)):
        descs = tables.get(table, [])
        if not descs and not delta_tables.exists(spark, settings.mirror_uri(table)):
            continue  # DDL or TRUNCATE of a table no row event has described yet: nothing to apply it to
        candidates.append((table, descs, control.get(table, TableControl())))
    one_table_per_mirror(settings, [c[0] for c in candidates])
    # Tables' schemas are independent: decided side by side. Their TRUNCATEs commit under another
    # transaction id than the row events (a session setting), so they run one after the other.
    schemas = _each_table(
        spark,
        settings,
        candidates,
        lambda c: _prepare_schema(spark, settings, c[0], descs=c[1], ctl=c[2], step=step),
    )
    touched: list[str] = []
    work: list[_TableWork] = []
    truncations: dict[str, Truncation] = {}
    for (table, descs, ctl), (result, key, new) in zip(candidates, schemas, strict=True):
        with step("truncate"):
            truncated_at, closings, new, fresh = _truncate(
                spark, settings, table, ctl=ctl, new=new, app_id=app_id, batch_id=batch_id
            )
        if fresh and truncated_at is not None:
            truncations[table] = (truncated_at, ctl.truncated_ts_ms)
        touched.append(table)
        if descs:
            counts = row_counts.get(table, RowCounts())
            work.append(_TableWork(table, descs, result, key, truncated_at, closings, counts, new))
    if truncations:
        with step("truncate"):
            _truncated(spark, settings, truncations, app_id=app_id, batch_id=batch_id)
    # The tombstones as of now (after the TRUNCATEs' deletes): every table's floors read this version, which
    # the batch's own append (last) does not change, so a replayed batch folds the same rows.
    with step("floors"):
        pinned = tombstones.pin(spark, settings.tombstones_uri())
    # Keyed tables without history whose rows are few share one fold (``mirror_fold``): a fold of its own
    # costs a table a few fixed seconds; a large table's own fold is cheaper per row than the generic one.
    shared = [
        item
        for item in work
        if item.key
        and not settings.wants_history(item.table)
        and row_counts.get(item.table, RowCounts()).rows < settings.mirror_shared_fold_rows
    ]
    shared_tables = {item.table for item in shared}
    with delta_tables.idempotent_dml(spark, app_id, batch_id):
        folded: DataFrame | None = None
        deletes: dict[str, int] = {}
        if shared:
            with step("fold"):
                folded = mirror_fold.fold_all(
                    spark, row_events, [FoldTable(w.table, w.descs, w.result, w.key, w.truncated_at) for w in shared]
                )
                deletes = mirror_fold.deletes_per_table(folded)
        done: list[_Written] = []
        try:

            def apply_one(item: _TableWork) -> None:
                if folded is not None and item.table in shared_tables:
                    written = _apply_folded(
                        spark,
                        settings,
                        item,
                        folded,
                        pinned=pinned,
                        app_id=app_id,
                        batch_id=batch_id,
                        step=step,
                    )
                else:
                    written = _apply_rows(
                        spark,
                        settings,
                        item,
                        row_events,
                        pinned=pinned,
                        app_id=app_id,
                        batch_id=batch_id,
                        step=step,
                    )
                with lock:
                    done.append(written)

            lock = threading.Lock()
            _each_table(spark, settings, work, apply_one)
            # After every table's MERGE: one commit of all the batch's deleted keys (``tombstones``).
            with step("tombstones_append"):
                deleted = [w.deleted for w in sorted(done, key=lambda w: w.table) if w.deleted is not None]
                if folded is not None:
                    deleting = [w for w in shared if deletes.get(w.table, 0)]
                    deleted += mirror_fold.deleted_keys(
                        folded, [(w.table, w.key, [w.result.types[k] for k in w.key]) for w in deleting]
                    )
                tombstones.record(settings.tombstones_uri(), deleted, app_id=app_id, batch_id=batch_id)
        finally:
            for written in done:
                if written.folded is not None:
                    release(written.folded)
            if folded is not None:
                release(folded)
    # Outside the batch's transaction id (a writer's own id and the session's must not meet in one commit).
    with step("tombstones_compact"):
        tombstones.compact(
            spark,
            settings.tombstones_uri(),
            max_files=settings.tombstone_compact_files,
            app_id=app_id + COMPACT_APP,
            batch_id=batch_id,
        )
    return touched


@dataclass(frozen=True, slots=True)
class _Written:
    """A table whose rows a batch wrote: the keys its own fold deleted (tombstone rows) and that fold, kept
    until the batch's tombstones are appended; both None when it deleted nothing or was folded with other
    tables (the shared fold's deleted keys are read for all its tables at once: ``mirror_fold.deleted_keys``)."""

    table: str
    deleted: DataFrame | None = None
    folded: DataFrame | None = None


def one_table_per_mirror(settings: SinkSettings, tables: list[str]) -> None:
    """Refuse a batch in which two source tables would write one mirror (``BINLAKE_SINK_TABLE_NAMES``).

    A mirror written before names its source table (``mirror_schema.prepare`` refuses another one); two
    tables new in the same batch would both create it, and the second creation would find it there.
    """
    owners: dict[str, str] = {}
    for table in tables:
        owner = owners.setdefault(settings.mirror_uri(table), table)
        if owner != table:
            raise ValueError(
                f"source tables {owner} and {table} both map to the mirror {settings.mirror_uri(table)}: "
                f"{SHARED_NAME_HINT}"
            )


def _each_table(
    spark: SparkSession, settings: SinkSettings, items: list[_Item], run_one: Callable[[_Item], _Done]
) -> list[_Done]:
    """``run_one`` of every table's item, on ``table_parallelism`` threads, results in the items' order (the
    first failure fails the batch)."""
    if len(items) <= 1 or settings.table_parallelism == 1:
        return [run_one(item) for item in items]
    # A pool thread is a new JVM thread too (pinned threads): it gets the batch's scheduler pool
    # (job._started) explicitly, since Spark's local properties only pass to child JVM threads.
    scheduler_pool = spark.sparkContext.getLocalProperty(SCHEDULER_POOL)

    def run(item: _Item) -> _Done:
        if scheduler_pool is not None:
            spark.sparkContext.setLocalProperty(SCHEDULER_POOL, scheduler_pool)
        return run_one(item)

    with ThreadPoolExecutor(min(settings.table_parallelism, len(items)), "binlake-mirror") as pool:
        futures = [pool.submit(run, item) for item in items]
        return [future.result() for future in futures]  # the first failure fails the batch (Spark replays it)


@dataclass(frozen=True, slots=True)
class _TableWork:
    """A table's row events to apply, with its schema and TRUNCATE decided (before the MERGEs)."""

    table: str
    descs: list[Descriptor]
    result: Plan
    key: list[str]
    truncated_at: str | None
    closings: tuple[Truncation, ...]
    """The TRUNCATEs known to this batch (the last one applied before it and the batch's own), oldest first:
    where a history table closes the versions of events older than a TRUNCATE (``history.apply``)."""
    counts: RowCounts
    new: NewMirror | None
    """The mirror, when this batch creates it: by its first write (``NewMirror.write``)."""


def _prepare_schema(
    spark: SparkSession,
    settings: SinkSettings,
    table: str,
    *,
    descs: list[Descriptor],
    ctl: TableControl,
    step: Step,
) -> tuple[Plan, list[str], NewMirror | None]:
    """Schema of one table's mirror (with the batch's ADD COLUMNs), tombstones and history: its plan, key,
    and the new mirror its first write creates (None: the mirror exists)."""
    declared = declared_descriptors(ctl)
    with step("mirror_schema"):
        result, key, new = prepare(spark, settings, table, descs + declared)
    if not descs or not key:
        return result, key, new
    missing = [k for k in key if k not in result.types]
    if missing:
        raise ValueError(f"{table}: key columns {missing} are not described by its events")
    with step("history_schema"):
        if settings.wants_history(table):
            history_uri = settings.history_uri(table)
            partition_by = None
            if not delta_tables.exists(spark, history_uri):
                partition_by = partition_columns(settings, table, result.types)
            history.prepare(spark, history_uri, table, key, result.types, partition_by=partition_by)
    return result, key, new


def declared_descriptors(ctl: TableControl) -> list[Descriptor]:
    """The columns a batch's ``ALTER TABLE ... ADD`` declares, as one descriptor of their own (none if none)."""
    return [Descriptor(_DDL_DESCRIPTOR, tuple(ctl.added), ())] if ctl.added else []


def _truncate(
    spark: SparkSession,
    settings: SinkSettings,
    table: str,
    *,
    ctl: TableControl,
    new: NewMirror | None,
    app_id: str,
    batch_id: int,
) -> tuple[str | None, tuple[Truncation, ...], NewMirror | None, bool]:
    """Apply the batch's TRUNCATE to the table's own tables (if newer than the last one); return the table's
    truncation sequence, the TRUNCATEs history versions close at (``_TableWork.closings``), the mirror this
    batch creates (``new``, with the TRUNCATE in its properties), and whether the TRUNCATE is new: its
    tombstones and its mirror's properties are then left to ``_truncated``."""
    uri = settings.mirror_uri(table)
    wanted = ctl.truncated_at
    previous: str | None = None
    known: dict[str, int | None] = {}
    if new is not None:
        # Nothing to delete from a mirror not yet written: its creating write records the TRUNCATE (a creation
        # and a property change of their own would cost two more commits, seconds of a small table's batch).
        if wanted is not None:
            new = replace(new, properties={**new.properties, **truncation_properties(wanted, ctl.truncated_ts_ms)})
    else:
        props = delta_tables.properties(spark, uri)
        previous = props.get(PROP_TRUNCATED)
        if previous is not None:
            known[previous] = int(props[PROP_TRUNCATED_TS]) if props.get(PROP_TRUNCATED_TS) else None
    known.update(ctl.truncations)
    closings = tuple(sorted(known.items()))
    if wanted is None or (previous is not None and wanted <= previous):
        return previous, closings, new, False
    if new is None:
        with delta_tables.idempotent_dml(spark, app_id + TRUNCATE_APP, batch_id):
            DeltaTable.forPath(spark, uri).delete(F.col(ORDER_KEY) < F.lit(wanted))
    legacy = settings.legacy_tombstones_uri(table)
    tombstones.truncate_legacy(spark, legacy, wanted, app_id=app_id + TRUNCATE_APP, batch_id=batch_id)
    history_uri = settings.history_uri(table)
    if delta_tables.exists(spark, history_uri):
        history.close_all(
            spark,
            history_uri,
            truncated_at=wanted,
            ts_ms=ctl.truncated_ts_ms,
            app_id=app_id + TRUNCATE_APP,
            batch_id=batch_id,
        )
    return wanted, closings, new, True


def truncation_properties(sequence: str, ts_ms: int | None) -> dict[str, str]:
    """A mirror's properties recording its last TRUNCATE applied."""
    return {PROP_TRUNCATED: sequence, PROP_TRUNCATED_TS: "" if ts_ms is None else str(ts_ms)}


def _truncated(
    spark: SparkSession, settings: SinkSettings, truncations: dict[str, Truncation], *, app_id: str, batch_id: int
) -> None:
    """Finish the batch's new TRUNCATEs (table -> (sequence, ``ts_ms``)): the lake's tombstones older than
    each, in one commit, then each existing mirror's ``binlake.truncated_at`` and ``binlake.truncated_ts_ms``."""
    floors = {table: sequence for table, (sequence, _) in truncations.items()}
    tombstones.truncate(spark, settings.tombstones_uri(), floors, app_id=app_id + TRUNCATE_APP, batch_id=batch_id)
    # Set last: a crash before this line replays the deletes (skipped by their txn ids) and comes here again.
    for table, (wanted, ts_ms) in sorted(truncations.items()):
        uri = settings.mirror_uri(table)
        if delta_tables.exists(spark, uri):  # a new mirror records it in its creating write
            delta_tables.set_properties(spark, uri, truncation_properties(wanted, ts_ms))


def _apply_rows(
    spark: SparkSession,
    settings: SinkSettings,
    work: _TableWork,
    row_events: DataFrame,
    *,
    pinned: tombstones.Pinned,
    app_id: str,
    batch_id: int,
    step: Step,
) -> _Written:
    """MERGE one table's row events (runs on a worker thread, under the batch's transaction id); return its
    deleted keys (its fold: release it once they are appended)."""
    table, descs, result, key = work.table, work.descs, work.result, work.key
    uri = settings.mirror_uri(table)
    physical = list(result.types)
    wants_history = bool(key) and settings.wants_history(table)  # a key-less table has no history table
    # A history keeps the versions of events older than the table's TRUNCATE too (closed by it); the mirror not.
    events = table_events(row_events, table, descs=descs, truncated_at=None if wants_history else work.truncated_at)
    if not key:
        with step("append_keyless"):
            rows = keyless_rows(events, descs=descs, result=result)
            _append_keyless(spark, uri, rows, app_id=app_id, batch_id=batch_id, new=work.new)
        return _Written(table)
    key_index = [physical.index(k) for k in key]
    all_events = keyed_events(events, descs=descs, result=result, key=key, only_key=not wants_history)
    mirror_events = all_events
    if wants_history:
        with step("persist_events"):
            all_events = all_events.persist(StorageLevel.MEMORY_AND_DISK_DESER)
        mirror_events = all_events
        if work.truncated_at is not None:
            mirror_events = all_events.where(F.col(ORDER_KEY) > F.lit(work.truncated_at))
    try:
        with step("fold"):
            # Materialized once, lineage cut: the MERGE (told not to materialize its source again) and the
            # tombstones read plain rows; the floors are read at a pinned version, so this is reproducible.
            # The deleted keys are counted while the checkpoint is written (no job of their own).
            counted = Observation(f"binlake-fold-{uuid.uuid4().hex}")  # unique: tables fold concurrently
            folded = (
                folded_with_floors(spark, settings, table, mirror_events, key=key, result=result, pinned=pinned)
                .observe(counted, F.count_if("_delete").alias("deletes"))
                .localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
            )
            deletes = int(counted.get["deletes"])
        try:
            _write_folded(spark, settings, work, folded, physical=physical, app_id=app_id, batch_id=batch_id, step=step)
            if wants_history:
                with step("history"):
                    history.apply(
                        spark,
                        settings.history_uri(table),
                        new_events=all_events,
                        physical=physical,
                        types=result.types,
                        key_index=key_index,
                        closings=work.closings,
                        app_id=app_id,
                        batch_id=batch_id,
                    )
        except BaseException:
            release(folded)  # else kept until the batch's tombstones are appended (``apply``)
            raise
    finally:
        if wants_history:
            with step("unpersist"):
                all_events.unpersist()
    if not deletes:
        release(folded)
        return _Written(table)
    types = [result.types[k] for k in key]
    deleted = tombstones.deleted(folded, table, key_cols=[f"_v{i}" for i in key_index], types=types)
    return _Written(table, deleted, folded)


def table_events(row_events: DataFrame, table: str, *, descs: list[Descriptor], truncated_at: str | None) -> DataFrame:
    """One table's row events newer than its TRUNCATE, their images decoded, the image to apply in ``IMAGE``."""
    # Only this table's rows (partition pruning on a changelog read), their images decoded here, once.
    fields = changelog.mirror_fields(descriptors_vary=len(descs) > 1)
    events = changelog.expand(row_events.where(F.col("source_table") == table), fields)
    if len(descs) > 1:
        events = with_descriptor_id(events)
    if truncated_at is not None:
        events = events.where(sequence() > F.lit(truncated_at))
    # The image once, as a column: every physical column reads it (a smaller plan to analyze).
    return events.withColumn(IMAGE, F.expr(f"CASE WHEN {_IS_DELETE_SQL} THEN before ELSE after END"))


def keyless_rows(events: DataFrame, *, descs: list[Descriptor], result: Plan) -> DataFrame:
    """A key-less table's events (``table_events``) as mirror rows: its columns (those an event does not know
    NULL), ``ORDER_KEY``, ``OP`` and ``ORIGIN``, one row per origin (``_append_keyless``)."""
    physical = list(result.types)
    carry = (f"{origin_sql()} AS {ORIGIN}",)
    projected = project(events, IMAGE, _IS_DELETE_SQL, descs=descs, result=result, physical=physical, carry=carry)
    return projected.selectExpr(
        *[f"CASE WHEN _k{i} THEN _v{i} END AS {quote(phys)}" for i, phys in enumerate(physical)],
        ORDER_KEY,
        OP,
        ORIGIN,
    ).dropDuplicates([ORIGIN])


def keyed_events(
    events: DataFrame, *, descs: list[Descriptor], result: Plan, key: list[str], only_key: bool
) -> DataFrame:
    """A keyed table's events (``table_events``) projected, an UPDATE that moves a row to another key also
    as a DELETE of the old key (``only_key``: projecting only the key columns of that DELETE)."""
    physical = list(result.types)
    # An UPDATE that moves a row to another key deletes the old key: only the old key matters there.
    differs = " OR ".join(
        f"NOT ({convert(f'before[{sql_string(name)}]', result.types[name])}"
        f" <=> {convert(f'after[{sql_string(name)}]', result.types[name])})"
        for name in key
    )
    moved = f"op = 'UPDATE' AND before IS NOT NULL AND after IS NOT NULL AND ({differs})"
    return project_with_moves(
        events,
        IMAGE,
        _IS_DELETE_SQL,
        moved=moved,
        descs=descs,
        result=result,
        physical=physical,
        only={physical.index(k) for k in key} if only_key else None,
    )


def folded_with_floors(
    spark: SparkSession,
    settings: SinkSettings,
    table: str,
    events: DataFrame,
    *,
    key: list[str],
    result: Plan,
    pinned: tombstones.Pinned,
) -> DataFrame:
    """A keyed table's events (``keyed_events``) folded per key (``_fold``), with each key's tombstone floor
    (the lake's tombstones as ``pinned``, see ``tombstones.floors``)."""
    physical = list(result.types)
    key_index = [physical.index(k) for k in key]
    folded = _fold(events, key_index, len(physical))
    return _with_floors(spark, settings, folded, table=table, key=key, result=result, pinned=pinned)


def _with_floors(
    spark: SparkSession,
    settings: SinkSettings,
    rows: DataFrame,
    *,
    table: str,
    key: list[str],
    result: Plan,
    pinned: tombstones.Pinned,
) -> DataFrame:
    """A keyed table's folded rows (key values in ``_v<i>``) with each key's tombstone floor: the lake's
    tombstones as ``pinned`` and the table's own tombstone table of an earlier release (``tombstones.floors``)."""
    physical = list(result.types)
    types = [result.types[k] for k in key]
    floor = tombstones.floors(
        spark,
        pinned=pinned,
        table=table,
        legacy_uri=settings.legacy_tombstones_uri(table),
        key=key,
        types=types,
    )
    key_cols = [f"_v{physical.index(k)}" for k in key]
    return tombstones.with_floors(rows, floor, key_cols=key_cols, types=types)


def _apply_folded(
    spark: SparkSession,
    settings: SinkSettings,
    work: _TableWork,
    folded: DataFrame,
    *,
    pinned: tombstones.Pinned,
    app_id: str,
    batch_id: int,
    step: Step,
) -> _Written:
    """MERGE one keyed table's share of the batch's shared fold (``mirror_fold``)."""
    table, result, key = work.table, work.result, work.key
    physical = list(result.types)
    key_index = [physical.index(k) for k in key]
    # The shared fold is checkpointed and the floors are read at a pinned version: the MERGE and the
    # tombstones read the same rows.
    rows = mirror_fold.table_rows(folded, table, result=result, physical=physical, key_index=key_index)
    with step("floors"):
        source = _with_floors(spark, settings, rows, table=table, key=key, result=result, pinned=pinned)
    # Its deleted keys are read from the shared fold with every other table's (``mirror_fold.deleted_keys``).
    _write_folded(spark, settings, work, source, physical=physical, app_id=app_id, batch_id=batch_id, step=step)
    return _Written(table)


def _write_folded(
    spark: SparkSession,
    settings: SinkSettings,
    work: _TableWork,
    source: DataFrame,
    *,
    physical: list[str],
    app_id: str,
    batch_id: int,
    step: Step,
) -> None:
    """MERGE a keyed table's folded rows (``source``, with their floors) into its mirror: the same for a fold
    of its own and for its share of the shared fold."""
    with step("merge"):
        _merge(
            spark,
            settings.mirror_uri(work.table),
            source=source,
            key_index=[physical.index(k) for k in work.key],
            physical=physical,
            app_id=app_id,
            batch_id=batch_id,
            probe=work.counts.changes == 0,
            new=work.new,
        )


def _append_keyless(
    spark: SparkSession,
    uri: str,
    rows: DataFrame,
    *,
    app_id: str,
    batch_id: int,
    new: NewMirror | None,
) -> None:
    """Append a key-less table's row events (``keyless_rows``) whose origin the mirror does not hold yet.

    The batch's own commit is skipped by Delta on a replay of the batch id; the
    origin check covers a replay under a new checkpoint (another app id) and a
    change delivered twice. The mirror is read at a pinned version and only
    between the batch's smallest and largest origin (file statistics skip the
    rest when origins grow with time, as they do within one input topic).
    """
    if new is not None:
        new.write(rows)
        return
    version = delta_tables.current_version(spark, uri)
    if version is not None:
        bounds = rows.agg(F.min(ORIGIN), F.max(ORIGIN)).first()
        if bounds is None or bounds[0] is None:
            return
        held = (
            delta_tables.read_at(spark, uri, version).where(F.col(ORIGIN).between(bounds[0], bounds[1])).select(ORIGIN)
        )
        rows = rows.join(held, on=ORIGIN, how="left_anti")
    delta_tables.append(rows, uri, app_id, batch_id)


def _fold(events: DataFrame, key_index: list[int], width: int) -> DataFrame:
    """One row per key: what the batch knows of it, for the MERGE to apply above the key's floor.

    One aggregation, no window: per key the newest sequence (``ORDER_KEY``),
    whether the newest event is a DELETE (``_delete``), the newest DELETE's
    sequence (``_ld``), and per value column the newest event that knows it:
    its value (``_v{i}``) and sequence (``_o{i}``). The floor is applied
    by the MERGE (see the module doc): events at or below it are exactly the
    oldest ones, so "the newest event knowing column i" is above the floor iff
    any event above the floor knows it, and it is live (after the batch's last
    effective DELETE) iff it is newer than ``_ld``.
    """
    keys = [f"_v{i}" for i in key_index]
    events = events.where(" AND ".join(f"{k} IS NOT NULL" for k in keys))
    # SQL text: one F.expr per aggregate rather than several Column calls (see ``typemap.convert``).
    aggregates = [
        f"max({ORDER_KEY}) AS {ORDER_KEY}",
        f"max_by({IS_DELETE}, {ORDER_KEY}) AS _delete",
        f"max(CASE WHEN {IS_DELETE} THEN {ORDER_KEY} END) AS {LAST_DELETE}",
    ]
    for i in range(width):
        if i in key_index:
            continue
        known_at = f"CASE WHEN _k{i} THEN {ORDER_KEY} END"
        aggregates += [f"max_by(_v{i}, {known_at}) AS _v{i}", f"max({known_at}) AS _o{i}"]
    return events.groupBy(*keys).agg(*[F.expr(a) for a in aggregates])


def _merge(
    spark: SparkSession,
    uri: str,
    *,
    source: DataFrame,
    key_index: list[int],
    physical: list[str],
    app_id: str,
    batch_id: int,
    probe: bool = True,
    new: NewMirror | None = None,
) -> None:
    """MERGE the folded batch: each key's newer events, column by column, above the key's floor.

    A matched row's floor is its sequence; an unmatched key's is its
    tombstone's (``tombstones.FLOOR``, NULL when it has none). ``probe``: first ask
    whether the mirror holds any of the keys, and append if it holds none. Worth
    a job only for a batch of INSERTs: one that updates or deletes rows the
    mirror almost always holds is MERGEd at once (the answer would cost about
    as much as the append it could save). ``new``: the mirror does not exist yet; the rows create it.
    """
    target_columns = [f.name for f in (new.schema if new is not None else delta_tables.schema(spark, uri)).fields]
    clauses = merge_clauses(target_columns, physical=physical, key_index=key_index)
    update: dict[str, str | Column] = dict(clauses.update)
    insert: dict[str, str | Column] = dict(clauses.insert)
    condition, newer, inserted = clauses.condition, clauses.newer, clauses.inserted
    # The rows a MERGE could only insert: what a new mirror is created with, or an append adds.
    inserted_rows = source.alias("s").where(inserted).selectExpr(*[f"{e} AS {c}" for c, e in insert.items()])
    if new is not None:
        new.write(inserted_rows)
        return
    if not delta_tables.holds_files(spark, uri) or (
        probe and not _holds_any(spark, uri, source=source, key_index=key_index, physical=physical)
    ):
        # None of the batch's keys is in the mirror (an initial load, an insert-only table): the MERGE
        # could only insert, and an append of the same rows costs a fraction of it (no join, no rewrite).
        delta_tables.append(inserted_rows, uri, app_id, batch_id)
        return
    with delta_tables.idempotent_dml(spark, app_id, batch_id):
        (
            DeltaTable.forPath(spark, uri)
            .alias("t")
            .merge(source.alias("s"), condition)
            .whenMatchedDelete(condition=f"s._delete AND {newer}")
            .whenMatchedUpdate(condition=f"NOT s._delete AND {newer}", set=update)
            .whenNotMatchedInsert(condition=inserted, values=insert)
            .execute()
        )


@dataclass(frozen=True, slots=True)
class MergeClauses:
    """How a mirror's row (``t``) and a key's folded batch (``s``, with its floor) combine, as SQL text: the
    clauses of the MERGE (``_merge``), and what a current-state read computes (``current_state``)."""

    condition: str
    """The key columns equal."""
    newer: str
    """A matched key's batch is newer than its mirror row (else the row stays as it is)."""
    inserted: str
    """An unmatched key's batch makes a row (its newest event is no DELETE, newer than its tombstone)."""
    update: dict[str, str]
    """Target column -> its value in a matched row the batch updates (the batch deletes it when ``s._delete``)."""
    insert: dict[str, str]
    """Target column -> its value in an inserted row (columns missing here are NULL)."""


def merge_clauses(target_columns: list[str], *, physical: list[str], key_index: list[int]) -> MergeClauses:
    """The clauses of a folded batch's MERGE into a mirror with ``target_columns`` (see ``_merge``)."""
    condition = " AND ".join(f"t.{quote(physical[i])} = s._v{i}" for i in key_index)
    floor = f"coalesce(t.{ORDER_KEY}, '')"
    reset = f"s.{LAST_DELETE} > {floor}"
    tomb = f"coalesce(s.{tombstones.FLOOR}, '')"
    index = {phys: i for i, phys in enumerate(physical)}
    update: dict[str, str] = {ORDER_KEY: f"s.{ORDER_KEY}"}
    insert: dict[str, str] = {ORDER_KEY: f"s.{ORDER_KEY}"}
    for name in target_columns:
        if name == ORDER_KEY or name not in index:
            if name != ORDER_KEY:
                update[quote(name)] = f"CASE WHEN {reset} THEN NULL ELSE t.{quote(name)} END"
            continue
        i = index[name]
        if i in key_index:
            insert[quote(name)] = f"s._v{i}"
            continue
        live = f"(s.{LAST_DELETE} IS NULL OR s._o{i} > s.{LAST_DELETE})"
        update[quote(name)] = (
            f"CASE WHEN s._o{i} > {floor} AND {live} THEN s._v{i} WHEN {reset} THEN NULL ELSE t.{quote(name)} END"
        )
        insert[quote(name)] = f"CASE WHEN s._o{i} > {tomb} AND {live} THEN s._v{i} END"
    return MergeClauses(
        condition=condition,
        newer=f"{floor} < s.{ORDER_KEY}",
        inserted=f"NOT s._delete AND {tomb} < s.{ORDER_KEY}",
        update=update,
        insert=insert,
    )


def _holds_any(spark: SparkSession, uri: str, *, source: DataFrame, key_index: list[int], physical: list[str]) -> bool:
    """Whether the mirror, which holds files, holds any key of the folded batch (read at its current
    version: the sink is its only writer, and this batch's own commit to it comes after this check,
    replayed or not)."""
    version = delta_tables.current_version(spark, uri)
    if version is None:
        return False
    held = delta_tables.read_at(spark, uri, version).select(
        *[F.col(quote(physical[i])).alias(f"_v{i}") for i in key_index]
    )
    return not source.join(held, on=[f"_v{i}" for i in key_index], how="left_semi").isEmpty()
