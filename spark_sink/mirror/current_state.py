"""Current-state reads: a source table as the changelog says it is now, however far its mirror lags.

With ``mirrors=follow`` the mirror query applies the changelog to the mirrors
in micro-batches of its own (``BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S``), so a
physical mirror lags the changelog by up to that interval plus a batch.
``current`` reads the table as it will be once the mirror query has applied
everything the changelog holds now: merge on read,

    current = mirror  (+)  fold(the changelog's tail for the table)

where the tail is what the changelog committed after the last version the
mirror query has applied in full (its checkpoint says which: the Delta
source's end offset of its last committed batch, ``applied_through``), read as
the changelog's change data feed; for a table whose changes a mirror batch
deferred (``tails``), from the first version of its deferred tail. The fold and its combination with the mirror
are the mirror's own rules (``fold.fold_all``, ``merge.with_floors``,
``merge_rules.MergeClauses``): columns absent from an image keep the mirror's
value, a key's tombstone keeps an older event from bringing it back,
TRUNCATE, ADD COLUMN and type widening apply. The tail may overlap what the
mirror holds (a batch may end inside a changelog version; the mirror query may
be committing while this reads): applying an event twice changes nothing,
since each key's floor ignores what is not newer than it.

Where the tail cannot be read as a change feed (a changelog of an earlier
release, before the sink enabled it) or the mirror query's progress is not
known (a new or deleted checkpoint), the whole changelog of the table is
folded: the same result, more to read.

Tables without a key: the mirror's rows plus the tail's events whose origin
the mirror does not hold. With ``mirrors=inline`` the mirrors never lag the
changelog: ``current`` is the mirror.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from binlake.shared.event.model import ROW_OPS
from binlake.spark_sink import delta
from binlake.spark_sink.changelog.table import change_feed_from, inserted_between
from binlake.spark_sink.checkpoint import offset_log
from binlake.spark_sink.delta import quote
from binlake.spark_sink.hadoop_files import HadoopFiles
from binlake.spark_sink.layout import COLUMN_ORDER, HIDDEN, ORDER_KEY, ORIGIN, PROP_KEY, PROP_TRUNCATED
from binlake.spark_sink.mirror import apply, batch_facts, fold, merge, mirror_state, tails, tombstones
from binlake.spark_sink.mirror.control_events import TableControl
from binlake.spark_sink.mirror.fold import FoldTable
from binlake.spark_sink.mirror.plan import Descriptor, Plan
from binlake.spark_sink.mirror.schema import planned
from binlake.spark_sink.settings import SinkSettings


def applied_by(offsets_file: str | None) -> int:
    """The newest changelog version a mirror batch applied in full, from its offset log entry
    (``offset_log``: the Delta source's end offset); -1 when it does not say.

    The end offset is the last changelog file the batch read: ``reservoirVersion`` and the file's index in
    it. The batch may have stopped inside that version, so only the versions before it count; an offset
    inside the initial snapshot of a query started on an existing changelog (``isStartingVersion``)
    counts nothing.
    """
    offset = offset_log.source_offset(offsets_file)
    if not isinstance(offset, dict) or "reservoirVersion" not in offset or offset.get("isStartingVersion"):
        return -1
    return int(offset["reservoirVersion"]) - 1


def applied_through(spark: SparkSession, checkpoint: str) -> int:
    """The newest changelog version the mirror query (checkpoint ``checkpoint``) has applied in full, or -1.

    A batch's offsets are logged before it runs and its commit file after its every commit: the newest
    committed batch's end offset is the mirror query's progress.
    """
    files = HadoopFiles(spark)
    done = [int(name) for name in files.names(f"{checkpoint}/commits") if name.isdigit()]
    if not done:
        return -1
    return applied_by(files.read(f"{checkpoint}/offsets/{max(done)}"))


def tail(spark: SparkSession, uri: str, after: int) -> DataFrame:
    """The changelog rows committed after version ``after`` (all of them when ``after`` is -1 or the change
    feed does not reach back to it), in the changelog's columns."""
    latest = delta.state(spark, uri)
    if latest is None:
        raise ValueError(f"no changelog at {uri}")
    whole = spark.read.format("delta").load(uri)
    feed_from = change_feed_from(latest.properties)
    if after < 0 or feed_from is None or after + 1 < feed_from:
        return whole
    if after >= latest.version:
        return whole.limit(0)
    return inserted_between(spark, uri, after + 1, latest.version).select(*whole.columns)


def current(spark: SparkSession, settings: SinkSettings, table: str) -> DataFrame:
    """Source table ``table`` as the changelog holds it now: the mirror's columns (hidden ones included), one
    row per key (per row event without a key); an empty frame for a table the changelog does not name."""
    return current_tables(spark, settings, [table])[table]


def current_tables(spark: SparkSession, settings: SinkSettings, tables: list[str]) -> dict[str, DataFrame]:
    """``current`` of several tables, their tail's control events and column descriptors found at once, the
    keyed tables' tails folded in one aggregation (``fold.fold_all``, materialized once, each table's rows
    then one projection of it), as the mirror query folds them."""
    if settings.mirrors == "inline":
        return {table: _mirror_or_empty(spark, settings.mirror_uri(table), None) for table in tables}
    after = applied_through(spark, settings.mirror_checkpoint())
    # Tables whose changes a mirror batch deferred (``tails``): their tails start before that.
    _, deferred = tails.read(spark, settings)
    firsts = [deferred.tables[t].first for t in tables if t in deferred.tables]
    if firsts and after >= 0:
        after = min(after, min(firsts) - 1)
    rows = tail(spark, settings.changelog_uri(), after).where(F.col("source_table").isin(tables))
    facts = batch_facts.collect(rows)
    control, descs = facts.control, facts.descriptors
    row_events = rows.where(F.col("op").isin(sorted(ROW_OPS)))
    pinned = tombstones.pin(spark, settings.tombstones_uri())
    states = {
        table: _state(spark, settings, table, descs=descs.get(table, []), control=control.get(table, TableControl()))
        for table in tables
    }
    keyed = [state for state in states.values() if isinstance(state, _Fold) and state.key]
    folded: DataFrame | None = None
    if keyed:
        folded = fold.fold_all(
            spark, row_events, [FoldTable(s.table, s.descs, s.result, s.key, s.truncated) for s in keyed]
        )
    out: dict[str, DataFrame] = {}
    for table, state in states.items():
        if isinstance(state, DataFrame):
            out[table] = state
        elif state.key:
            assert folded is not None
            out[table] = _from_fold(spark, settings, state, folded, pinned=pinned)
        else:
            out[table] = _keyless(state, row_events)
    return out


@dataclass(frozen=True, slots=True)
class _Fold:
    """A table whose tail has row events to fold over its mirror: the mirror as the tail leaves it planned."""

    table: str
    descs: list[Descriptor]
    result: Plan
    key: list[str]
    schema: StructType
    held: DataFrame
    """The mirror's rows in ``schema`` (none past its TRUNCATE)."""
    truncated: str | None


def _state(
    spark: SparkSession, settings: SinkSettings, table: str, *, descs: list[Descriptor], control: TableControl
) -> DataFrame | _Fold:
    """One table's current state when the tail has no row event of it, else what folding its events needs."""
    uri = settings.mirror_uri(table)
    found = delta.state(spark, uri)
    truncated = (found.properties if found is not None else {}).get(PROP_TRUNCATED)
    if control.truncated_at is not None and (truncated is None or control.truncated_at > truncated):
        truncated = control.truncated_at
    declared = apply.declared_descriptors(control)
    if not descs and not declared:
        held = _mirror_or_empty(spark, uri, None)
        if truncated is None or found is None:
            return held
        key: list[str] = json.loads(found.properties.get(PROP_KEY, "[]"))
        physical = [f.name for f in found.schema.fields if f.name not in HIDDEN]
        return _truncated(held, truncated, key=key, legacy_width=mirror_state.legacy_width(found.properties, physical))
    result, key, schema = planned(spark, settings, table, descs + declared)
    held = _mirror_or_empty(spark, uri, schema)
    if truncated is not None:
        held = _truncated(held, truncated, key=key, legacy_width=result.legacy_width)
    if not descs:
        return held  # the tail only declares columns (or truncates): no row event to fold
    return _Fold(table, descs, result, key, schema, held, truncated)


def _truncated(held: DataFrame, at: str, *, key: list[str], legacy_width: int) -> DataFrame:
    """A mirror's rows as the TRUNCATE at ``at`` leaves them (``mirror_state.truncate``)."""
    if key and COLUMN_ORDER in held.columns:
        return mirror_state.truncated(held, at, key=key, legacy_width=legacy_width)
    return held.where(F.col(ORDER_KEY) >= F.lit(at))


def _keyless(state: _Fold, row_events: DataFrame) -> DataFrame:
    """A key-less table's current state: the mirror's rows and the tail's row events it does not hold yet."""
    events = merge.table_events(row_events, state.table, descs=state.descs, truncated_at=state.truncated)
    new = merge.keyless_rows(events, descs=state.descs, result=state.result)
    held = state.held
    return held.unionByName(new.join(held.select(ORIGIN), on=ORIGIN, how="left_anti"), allowMissingColumns=True)


def _from_fold(
    spark: SparkSession, settings: SinkSettings, state: _Fold, folded: DataFrame, *, pinned: tombstones.Pinned
) -> DataFrame:
    """One keyed table's current state from its share of the tails' fold (``fold.fold_all``)."""
    physical = list(state.result.types)
    key_index = [physical.index(k) for k in state.key]
    rows = fold.table_rows(folded, state.table, result=state.result, physical=physical, key_index=key_index)
    source = merge.with_floors(
        spark, settings, rows, table=state.table, key=state.key, result=state.result, pinned=pinned
    )
    return merge.merged(
        state.held,
        source,
        schema=state.schema,
        physical=physical,
        key=state.key,
        legacy_width=state.result.legacy_width,
    )


def _mirror_or_empty(spark: SparkSession, uri: str, schema: StructType | None) -> DataFrame:
    """The mirror's rows with ``schema``'s columns (added ones NULL, widened ones cast; None: as it is), or
    none where there is no mirror yet."""
    found = delta.state(spark, uri)
    if found is None:
        return delta.empty(spark, schema if schema is not None else StructType([]))
    rows = spark.read.format("delta").load(uri)
    if schema is None:
        return rows
    have = set(rows.columns)
    return rows.select(
        *[
            (F.col(quote(f.name)) if f.name in have else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in schema.fields
        ]
    )
