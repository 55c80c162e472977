"""One keyed table's row events -> its mirror: the floors, the fold per key and the MERGE (and a key-less
table's append). The mirror's rules, shared by the mirror query (``apply``) and the current-state reads
(``current_state``).

Each key's events are folded (``fold``, one aggregation for all the batch's keyed tables): per column the
newest event that knows it, per key the newest event and the newest DELETE. The MERGE
(``merge_rules.merge_clauses``) then applies each column where its event is newer than what the mirror's
column holds (``mirror_state``), or, for a key the mirror does not hold, newer than the key's tombstone
(``with_floors``): an old event never overwrites newer state and never resurrects a deleted row, and the
result does not depend on the batches. The fold need not know the floors: the events at or below a key's
floor are exactly its oldest ones, so the newest event knowing a column is above the floor iff any event
above it knows the column, and that value is live (after the batch's last effective DELETE) iff it is
newer than the newest DELETE.
"""

from __future__ import annotations

from typing import Final

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from binlake.spark_sink import delta, txn_append
from binlake.spark_sink.delta import quote
from binlake.spark_sink.events.order import origin_sql, sequence
from binlake.spark_sink.events.rows import MIRROR_FIELDS, expand
from binlake.spark_sink.layout import OP, ORDER_KEY, ORIGIN
from binlake.spark_sink.mirror import key_filter, tombstones
from binlake.spark_sink.mirror.merge_rules import merge_clauses, merged_read
from binlake.spark_sink.mirror.plan import Descriptor, Plan
from binlake.spark_sink.mirror.project import (
    IMAGE,
    project,
    project_with_moves,
    with_descriptor_id,
)
from binlake.spark_sink.mirror.schema import NewMirror
from binlake.spark_sink.mirror.typemap import convert, sql_string
from binlake.spark_sink.settings import SinkSettings

IS_DELETE_SQL: Final = "op = 'DELETE'"


def table_events(row_events: DataFrame, table: str, *, descs: list[Descriptor], truncated_at: str | None) -> DataFrame:
    """One table's row events newer than its TRUNCATE, their images decoded, the image to apply in ``IMAGE``."""
    # Only this table's rows (partition pruning on a changelog read), their images decoded here, once.
    events = row_events.where(F.col("source_table") == table)
    if len(descs) > 1:
        events = with_descriptor_id(events)  # before the body is expanded: read from its bytes
    events = expand(events, MIRROR_FIELDS)
    if truncated_at is not None:
        events = events.where(sequence() > F.lit(truncated_at))
    # The image once, as a column: every physical column reads it (a smaller plan to analyze).
    return events.withColumn(IMAGE, F.expr(f"CASE WHEN {IS_DELETE_SQL} THEN before ELSE after END"))


def keyless_rows(events: DataFrame, *, descs: list[Descriptor], result: Plan) -> DataFrame:
    """A key-less table's events (``table_events``) as mirror rows: its columns (those an event does not know
    NULL), ``ORDER_KEY``, ``OP`` and ``ORIGIN``, one row per origin (``append_keyless``)."""
    physical = list(result.types)
    carry = (f"{origin_sql()} AS {ORIGIN}",)
    projected = project(events, IMAGE, IS_DELETE_SQL, descs=descs, result=result, physical=physical, carry=carry)
    return projected.selectExpr(
        *[f"CASE WHEN _k{i} THEN _v{i} END AS {quote(phys)}" for i, phys in enumerate(physical)],
        ORDER_KEY,
        OP,
        ORIGIN,
    ).dropDuplicates([ORIGIN])


def keyed_events(events: DataFrame, *, descs: list[Descriptor], result: Plan, key: list[str]) -> DataFrame:
    """A keyed table's events (``table_events``) projected, an UPDATE that moves a row to another key also
    as a DELETE of the old key (a history table's versions, ``history``)."""
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
        IS_DELETE_SQL,
        moved=moved,
        descs=descs,
        result=result,
        physical=physical,
    )


def with_floors(
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


def append_keyless(
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
    version = delta.current_version(spark, uri)
    if version is not None:
        bounds = rows.agg(F.min(ORIGIN), F.max(ORIGIN)).first()
        if bounds is None or bounds[0] is None:
            return
        held = delta.read_at(spark, uri, version).where(F.col(ORIGIN).between(bounds[0], bounds[1])).select(ORIGIN)
        rows = rows.join(held, on=ORIGIN, how="left_anti")
    delta.append(rows, uri, app_id, batch_id)


def merge(
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
    legacy_width: int,
    key_limit: int = 0,
    batch_keys: int | None = None,
    rewrite_bytes_per_key: int = 0,
) -> None:
    """MERGE the folded batch: each key's newer events, column by column (``merge_rules``).

    A matched row's column takes the batch's value when its event is newer than the column's sequence
    (``mirror_state``); an unmatched key's when newer than its tombstone (``merge_rules.FLOOR``, NULL when it
    has none). ``legacy_width``: ``mirror_state.legacy_width``. ``probe``: first ask
    whether the mirror holds any of the keys, and append if it holds none. Worth
    a job only for a batch of INSERTs: one that updates or deletes rows the
    mirror almost always holds is MERGEd at once (the answer would cost about
    as much as the append it could save). ``new``: the mirror does not exist yet; the rows create it.
    ``key_limit``: the most distinct keys the MERGE's condition names (``key_filter``; 0: none).

    A mirror small for the batch (at most ``rewrite_bytes_per_key`` bytes of files per key of the batch,
    ``batch_keys``: at most its row events) is rewritten whole instead (``rewrite``): the same rows.
    """
    target = new.schema if new is not None else delta.schema(spark, uri)
    target_columns = [f.name for f in target.fields]
    clauses = merge_clauses(target_columns, physical=physical, key_index=key_index, legacy_width=legacy_width)
    update: dict[str, str | Column] = dict(clauses.update)
    insert: dict[str, str | Column] = dict(clauses.insert)
    condition, inserted = clauses.condition, clauses.inserted
    # The rows a MERGE could only insert: what a new mirror is created with, or an append adds.
    inserted_rows = source.alias("s").where(inserted).selectExpr(*[f"{e} AS {c}" for c, e in insert.items()])
    if new is not None:
        new.write(inserted_rows)
        return
    if not delta.holds_files(spark, uri) or (
        probe and not _holds_any(spark, uri, source=source, key_index=key_index, physical=physical)
    ):
        # None of the batch's keys is in the mirror (an initial load, an insert-only table): the MERGE
        # could only insert, and an append of the same rows costs a fraction of it (no join, no rewrite).
        delta.append(inserted_rows, uri, app_id, batch_id)
        return
    mirror_bytes = delta.size_bytes(spark, uri)
    if batch_keys and mirror_bytes is not None and mirror_bytes <= batch_keys * rewrite_bytes_per_key:
        key = [physical[i] for i in key_index]
        rewrite(
            spark,
            uri,
            source,
            schema=target,
            physical=physical,
            key=key,
            legacy_width=legacy_width,
            app_id=app_id,
            batch_id=batch_id,
        )
        return
    # The batch's keys as a condition on the mirror alone: the MERGE's scans of it keep only their rows.
    fields = {f.name: f.dataType for f in target.fields}
    keys = [(i, physical[i], fields[physical[i]]) for i in key_index if physical[i] in fields]
    on_keys = None
    if len(keys) == len(key_index):
        on_keys = key_filter.key_condition(source, keys, limit=key_limit, mirror_bytes=mirror_bytes)
    merge_condition = condition if on_keys is None else f"{condition} AND {on_keys}"
    with delta.idempotent_dml(spark, app_id, batch_id):
        (
            DeltaTable.forPath(spark, uri)
            .alias("t")
            .merge(source.alias("s"), merge_condition)
            .whenMatchedDelete(condition=clauses.deleted)
            .whenMatchedUpdate(condition=clauses.changes, set=update)
            .whenNotMatchedInsert(condition=inserted, values=insert)
            .execute()
        )


def _holds_any(spark: SparkSession, uri: str, *, source: DataFrame, key_index: list[int], physical: list[str]) -> bool:
    """Whether the mirror, which holds files, holds any key of the folded batch (read at its current
    version: the sink is its only writer, and this batch's own commit to it comes after this check,
    replayed or not)."""
    version = delta.current_version(spark, uri)
    if version is None:
        return False
    held = delta.read_at(spark, uri, version).select(*[F.col(quote(physical[i])).alias(f"_v{i}") for i in key_index])
    return not source.join(held, on=[f"_v{i}" for i in key_index], how="left_semi").isEmpty()


def rewrite(
    spark: SparkSession,
    uri: str,
    source: DataFrame,
    *,
    schema: StructType,
    physical: list[str],
    key: list[str],
    legacy_width: int,
    app_id: str,
    batch_id: int,
) -> None:
    """Replace the mirror's rows with what the MERGE of ``source`` would leave (``merged``), in one commit under
    (``app_id``, ``batch_id``).

    A MERGE costs per key of the batch (about 200 µs on 2 cores: it finds the files holding the keys, joins
    their rows with the batch and writes the changed ones), a rewrite per byte of the mirror (it reads the
    whole mirror, joins it with the batch and writes it all): for a batch with many keys for its mirror's
    size (a small or young table, a busy one), the rewrite is cheaper. Readers see either the old version or
    the new one, as with a MERGE. Partitions are replaced all together (``partitionOverwriteMode`` static,
    whatever the session says), so a partition whose rows all went does not keep them.
    """
    version = delta.current_version(spark, uri)
    assert version is not None, uri  # the caller found the mirror's files
    rows = merged(
        delta.read_at(spark, uri, version),
        source,
        schema=schema,
        physical=physical,
        key=key,
        legacy_width=legacy_width,
    )
    if txn_append.overwrite(rows, uri, app_id, batch_id, read_version=version) is not None:
        return  # written, or the table held the batch already (no rebuild of its state to tell: ``txn_append``)
    (
        rows.write.format("delta")
        .mode("overwrite")
        .option("partitionOverwriteMode", "static")
        .option("txnAppId", app_id)
        .option("txnVersion", str(batch_id))
        .save(uri)
    )


def merged(
    held: DataFrame,
    folded: DataFrame,
    *,
    schema: StructType,
    physical: list[str],
    key: list[str],
    legacy_width: int,
) -> DataFrame:
    """The mirror's rows (``held``, with ``schema``) after the MERGE of ``folded`` (its folded events with
    their floors), computed as a full outer join (``merge_rules.merged_read``): what ``merge`` leaves in the
    table. A current-state read and a mirror's ``rewrite`` both use it."""
    read = merged_read(
        [(f.name, f.dataType.simpleString()) for f in schema.fields],
        physical=physical,
        key_index=[physical.index(k) for k in key],
        legacy_width=legacy_width,
    )
    joined = held.alias("t").join(folded.alias("s"), on=F.expr(read.condition), how="full_outer")
    return joined.where(read.keep).selectExpr(*read.columns)
