"""Mirror (silver) tables: one Delta table per source table, kept equal to the source.

Per micro-batch and table, in this order (each step commits under the sink's
Delta transaction id for this batch, so a replay after a crash skips the steps
already committed):

1. schema: create or evolve the mirror (``schema``), including columns
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
   Step 4 is one aggregation for all the batch's keyed tables (``fold``: a
   fold per table cost each table seconds of fixed Spark work, however few
   its rows) and one MERGE per table: the fold does not read the mirror, and
   the MERGE applies the floor column by column (``merge``);
5. history (SCD2) tables, for the tables that ask for one (``history``);
6. once every table is written, the deleted keys of all of them are
   appended to the lake's one tombstone table, in one commit (``tombstones``).

Step 1 of all the batch's tables runs on a thread pool (``table_parallelism``),
then step 2 table by table (its commits carry a transaction id of their own,
a session setting; the tombstones' part in one commit for all tables), then
the fold, then each table's MERGE and history on the pool again, then step 6: Spark
schedules their jobs side by side, and each table is its own Delta table with
its own log, so they do not conflict. They all commit under the batch's one
transaction id, set once for the session around them
(``delta.idempotent_dml``).

Order everywhere is the *sequence* (``spark_sink.events.order``): ``order_key``, then
the event's origin, a total order that agrees with the source; the hidden
column ``_binlake_order_key`` holds it.

Tables without a primary key are append-only: each row event is appended with
``_binlake_op``, ``_binlake_order_key`` and ``_binlake_origin`` (the event's
origin), once: a row whose origin the mirror already holds is not appended
again, so a replay under a new checkpoint does not double the table.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Final, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.shared.event.model import ROW_OPS
from binlake.spark_sink import delta
from binlake.spark_sink.delta import release
from binlake.spark_sink.layout import PROP_TRUNCATED, PROP_TRUNCATED_TS
from binlake.spark_sink.mirror import batch_facts, fold, history, merge, mirror_state, tombstones
from binlake.spark_sink.mirror.batch_facts import BatchFacts, RowCounts
from binlake.spark_sink.mirror.control_events import TableControl, Truncation
from binlake.spark_sink.mirror.fold import FoldTable
from binlake.spark_sink.mirror.plan import Descriptor, Plan, one_table_per_mirror
from binlake.spark_sink.mirror.schema import NewMirror, features, partition_columns, prepare
from binlake.spark_sink.observe.batch_stats import BatchStats
from binlake.spark_sink.observe.steps import Step
from binlake.spark_sink.settings import SinkSettings

TRUNCATE_APP: Final = ".truncate"
"""Suffix of the transaction app id of a TRUNCATE's deletes: a second commit to the same table in one batch."""
COMPACT_APP: Final = ".compact"
"""Suffix of the transaction app id of the tombstone table's compaction (``tombstones.compact``)."""
SCHEDULER_POOL: Final = "spark.scheduler.pool"
_Item = TypeVar("_Item")
_Done = TypeVar("_Done")
_DDL_DESCRIPTOR: Final = 0


@dataclass(frozen=True, slots=True)
class Applied:
    """What a batch did to the mirrors: the tables it touched, and the tombstones it dropped as expired."""

    tables: list[str]
    tombstones_expired: int = 0


def apply(
    spark: SparkSession,
    settings: SinkSettings,
    rows: DataFrame,
    app_id: str,
    batch_id: int,
    *,
    step: Step,
    facts: BatchFacts | None = None,
) -> Applied:
    """Apply a batch's new changelog rows to the mirrors; say what it did (``Applied``). ``facts``: the rows'
    ``batch_facts`` when the caller has them (None: found here).

    Schema changes first (tables side by side), then TRUNCATEs one table after
    the other (commits under the TRUNCATE's own transaction id); then the row
    events of all tables are MERGEd concurrently (``table_parallelism``), every
    commit under the batch's one transaction id.
    """
    if facts is None:
        with step("batch_facts"):
            facts = batch_facts.collect(rows)
    control, tables, row_counts = facts.control, facts.descriptors, facts.counts
    row_events = rows.where(F.col("op").isin(sorted(ROW_OPS)))
    candidates: list[tuple[str, list[Descriptor], TableControl]] = []
    for table in sorted(set(tables) | set(control)):
        descs = tables.get(table, [])
        if not descs and not delta.exists(spark, settings.mirror_uri(table)):
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
    # Every keyed table's rows are folded in one aggregation (``fold``), then each table MERGEs its share.
    keyed = [item for item in work if item.key]
    with delta.idempotent_dml(spark, app_id, batch_id):
        folded: DataFrame | None = None
        deletes: dict[str, int] = {}
        if keyed:
            with step("fold"):
                folded = fold.fold_all(
                    spark, row_events, [FoldTable(w.table, w.descs, w.result, w.key, w.truncated_at) for w in keyed]
                )
                deletes = fold.deletes_per_table(folded)
        try:

            def apply_one(item: _TableWork) -> None:
                if not item.key:
                    _append_keyless(spark, settings, item, row_events, app_id=app_id, batch_id=batch_id, step=step)
                    return
                assert folded is not None
                _apply_folded(spark, settings, item, folded, pinned=pinned, app_id=app_id, batch_id=batch_id, step=step)
                if settings.wants_history(item.table):
                    _apply_history(spark, settings, item, row_events, app_id=app_id, batch_id=batch_id, step=step)

            _each_table(spark, settings, work, apply_one)
            # After every table's MERGE: one commit of all the batch's deleted keys (``tombstones``).
            with step("tombstones_append"):
                deleted: list[DataFrame] = []
                if folded is not None:
                    deleting = [w for w in keyed if deletes.get(w.table, 0)]
                    deleted = fold.deleted_keys(
                        folded, [(w.table, w.key, [w.result.types[k] for k in w.key]) for w in deleting]
                    )
                tombstones.record(spark, settings.tombstones_uri(), deleted, app_id=app_id, batch_id=batch_id)
        finally:
            if folded is not None:
                release(folded)
    # Outside the batch's transaction id (a writer's own id and the session's must not meet in one commit).
    with step("tombstones_compact"):
        expired = tombstones.compact(
            spark,
            settings.tombstones_uri(),
            max_files=settings.tombstone_compact_files,
            retention_s=settings.tombstone_retention_hours * 3600,
            app_id=app_id + COMPACT_APP,
            batch_id=batch_id,
        )
    return Applied(touched, expired or 0)


def older_than_retention(settings: SinkSettings, stats: BatchStats) -> int:
    """The batch's events older than the tombstone retention (0 when it is off): such a
    change may meet a deleted key whose tombstone has gone, and then applies as if the key had never been
    deleted (metric ``binlake_sink_changes_older_than_retention``)."""
    retention_s = settings.tombstone_retention_hours * 3600
    return stats.older_than((time.time() - retention_s) * 1000) if retention_s > 0 else 0


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
            if not delta.exists(spark, history_uri):
                partition_by = partition_columns(settings, table, result.types)
            history.prepare(
                spark,
                history_uri,
                table,
                key,
                result.types,
                fallbacks=result.fallbacks,
                partition_by=partition_by,
                features=features(settings),
            )
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
        props = delta.properties(spark, uri)
        previous = props.get(PROP_TRUNCATED)
        if previous is not None:
            known[previous] = int(props[PROP_TRUNCATED_TS]) if props.get(PROP_TRUNCATED_TS) else None
    known.update(ctl.truncations)
    closings = tuple(sorted(known.items()))
    if wanted is None or (previous is not None and wanted <= previous):
        return previous, closings, new, False
    if new is None:
        with delta.idempotent_dml(spark, app_id + TRUNCATE_APP, batch_id):
            mirror_state.truncate(spark, uri, wanted)
    legacy = settings.legacy_tombstones_uri(table)
    tombstones.truncate_legacy(spark, legacy, wanted, app_id=app_id + TRUNCATE_APP, batch_id=batch_id)
    history_uri = settings.history_uri(table)
    if delta.exists(spark, history_uri):
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
        if delta.exists(spark, uri):  # a new mirror records it in its creating write
            delta.set_properties(spark, uri, truncation_properties(wanted, ts_ms))


def _append_keyless(
    spark: SparkSession,
    settings: SinkSettings,
    work: _TableWork,
    row_events: DataFrame,
    *,
    app_id: str,
    batch_id: int,
    step: Step,
) -> None:
    """Append a key-less table's row events (runs on a worker thread, under the batch's transaction id)."""
    events = merge.table_events(row_events, work.table, descs=work.descs, truncated_at=work.truncated_at)
    with step("append_keyless"):
        rows = merge.keyless_rows(events, descs=work.descs, result=work.result)
        merge.append_keyless(
            spark, settings.mirror_uri(work.table), rows, app_id=app_id, batch_id=batch_id, new=work.new
        )


def _apply_history(
    spark: SparkSession,
    settings: SinkSettings,
    work: _TableWork,
    row_events: DataFrame,
    *,
    app_id: str,
    batch_id: int,
    step: Step,
) -> None:
    """Add a keyed table's row events to its history table (after its mirror's MERGE)."""
    physical = list(work.result.types)
    # A history keeps the versions of events older than the table's TRUNCATE too (closed by it); the mirror not.
    events = merge.table_events(row_events, work.table, descs=work.descs, truncated_at=None)
    with step("history"):
        history.apply(
            spark,
            settings.history_uri(work.table),
            new_events=merge.keyed_events(events, descs=work.descs, result=work.result, key=work.key),
            physical=physical,
            types=work.result.types,
            key_index=[physical.index(k) for k in work.key],
            closings=work.closings,
            app_id=app_id,
            batch_id=batch_id,
        )


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
) -> None:
    """MERGE one keyed table's share of the batch's fold (``fold``) into its mirror (runs on a worker thread,
    under the batch's transaction id)."""
    physical = list(work.result.types)
    key_index = [physical.index(k) for k in work.key]
    # The fold is checkpointed and the floors are read at a pinned version: a replayed batch MERGEs the same
    # rows. Its deleted keys are read from the fold with every other table's (``fold.deleted_keys``).
    rows = fold.table_rows(folded, work.table, result=work.result, physical=physical, key_index=key_index)
    with step("floors"):
        source = merge.with_floors(
            spark, settings, rows, table=work.table, key=work.key, result=work.result, pinned=pinned
        )
    with step("merge"):
        merge.merge(
            spark,
            settings.mirror_uri(work.table),
            source=source,
            key_index=key_index,
            physical=physical,
            app_id=app_id,
            batch_id=batch_id,
            probe=work.counts.changes == 0,
            new=work.new,
            legacy_width=work.result.legacy_width,
            key_limit=settings.merge_key_filter_max,
            batch_keys=work.counts.rows,
            rewrite_bytes_per_key=settings.mirror_rewrite_bytes_per_key,
        )
