"""History (SCD type 2) tables: every version of every row, per source table on request.

``history/<table>/`` (for tables matching ``BINLAKE_SINK_HISTORY_TABLES``) has
the mirror's columns plus ``valid_from`` / ``valid_to`` (event time,
``ts_ms``), ``is_current``, ``_binlake_order_key`` (the version's event),
``_binlake_op`` and ``_binlake_known`` (the columns that event knew).

One row per row event, ordered per key by ``order_key``: a version's values
are the previous version's with the columns its event knew overlaid (an
absent column keeps its value), ``valid_to`` is the next version's
``valid_from``, and the last version is current. A DELETE is a row of its own
(op ``DELETE``, ``valid_from = valid_to`` = the delete's time, not current)
that closes the version before it; the next INSERT starts from nothing. A
TRUNCATE adds such a closing row (op ``TRUNCATE``) to every current version,
and events older than it that arrive with it or after it are versions too,
closed by such a row: the history does not depend on how the events were cut
into batches.

Late and replayed events land in their place: every batch recomputes the
versions of the keys it touches from their stored rows (values +
``_binlake_known`` are enough to replay them) and the new events, and MERGEs
the result on (key, ``order_key``), so a stored version is rewritten in place
and an event already stored is not added twice; a stored ``TRUNCATE`` row that
closes nothing any more (a DELETE older than the TRUNCATE arrived after it)
is deleted.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import ArrayType, BooleanType, DataType, LongType, StringType, TimestampType

from binlake.spark_sink import delta
from binlake.spark_sink.delta import quote
from binlake.spark_sink.layout import (
    IS_CURRENT,
    KNOWN,
    OP,
    ORDER_KEY,
    PROP_FALLBACKS,
    PROP_KEY,
    PROP_SOURCE,
    VALID_FROM,
    VALID_TO,
)
from binlake.spark_sink.mirror.control_events import Truncation
from binlake.spark_sink.mirror.project import IS_DELETE, TS_MS
from binlake.spark_sink.mirror.schema import follow, upgrade

CLOSING_OPS: Final = ("DELETE", "TRUNCATE")
EXTRA: Final[dict[str, DataType]] = {
    VALID_FROM: TimestampType(),
    VALID_TO: TimestampType(),
    IS_CURRENT: BooleanType(),
    ORDER_KEY: StringType(),
    OP: StringType(),
    KNOWN: ArrayType(StringType()),
}


def prepare(
    spark: SparkSession,
    uri: str,
    table: str,
    key: list[str],
    types: dict[str, DataType],
    *,
    fallbacks: dict[str, str],
    partition_by: list[str] | None = None,
    features: dict[str, str] | None = None,
) -> None:
    """Create the history table (partitioned like the mirror), or give it the mirror's current columns and types.

    It has the mirror's fallback columns, so it names them as the mirror does (``binlake.fallbacks``,
    ``fallbacks``): without that a reader of the history alone would take a version whose value went to
    ``price__decimal_38_10`` for one whose ``price`` is NULL (the chaos run's history check did).
    """
    columns = {**{k: types[k] for k in key}, **{n: t for n, t in types.items() if n not in key}, **EXTRA}
    named = {PROP_FALLBACKS: json.dumps(fallbacks)}
    wanted = features or {}
    props = {PROP_KEY: json.dumps(key), PROP_SOURCE: table, "delta.enableTypeWidening": "true", **named, **wanted}
    follow(spark, uri, columns, properties=props, partition_by=partition_by)
    found = delta.properties(spark, uri)
    if json.loads(found.get(PROP_FALLBACKS, "{}")) != fallbacks:
        delta.set_properties(spark, uri, named)  # a fallback the mirror added, or a history made before this
    upgrade(spark, uri, wanted, found)  # a history made before a table feature (``schema.features``)


def _stored_as_events(
    stored: DataFrame, physical: list[str], types: dict[str, DataType], key_index: list[int]
) -> DataFrame:
    selected: list[Column] = [
        F.col(ORDER_KEY),
        F.col(OP),
        F.col(OP).isin(*CLOSING_OPS).alias(IS_DELETE),
        F.unix_millis(VALID_FROM).alias(TS_MS),
    ]
    for i, name in enumerate(physical):
        selected.append(F.col(quote(name)).cast(types[name]).alias(f"_v{i}"))
        known = F.lit(True) if i in key_index else F.coalesce(F.array_contains(KNOWN, name), F.lit(False))
        selected.append(known.alias(f"_k{i}"))
    return stored.select(*selected)


def versions(events: DataFrame, physical: list[str], key_index: list[int]) -> DataFrame:
    """Replay ``events`` (stored versions and new events, one row each) into history rows."""
    keys = [f"_v{i}" for i in key_index]
    by_key = Window.partitionBy(*keys).orderBy(ORDER_KEY)
    # Deletes before a row start a new segment: its state does not inherit from before the delete.
    segment = F.coalesce(
        F.sum(F.col(IS_DELETE).cast("int")).over(by_key.rowsBetween(Window.unboundedPreceding, -1)), F.lit(0)
    )
    staged = events.withColumn("_segment", segment)
    in_segment = Window.partitionBy(*keys, "_segment").orderBy(ORDER_KEY).rowsBetween(Window.unboundedPreceding, 0)
    valid_from = F.timestamp_millis(TS_MS)
    following = F.lead(valid_from).over(by_key)
    out: list[Column] = []
    for i, name in enumerate(physical):
        if i in key_index:
            out.append(F.col(f"_v{i}").alias(name))
            continue
        # ignorenulls skips events that did not know the column; the struct keeps a known NULL.
        state = F.last(F.when(F.col(f"_k{i}"), F.struct(F.col(f"_v{i}").alias("v"))), ignorenulls=True)
        out.append(state.over(in_segment)["v"].alias(name))
    known = F.array_compact(F.array(*[F.when(F.col(f"_k{i}"), F.lit(name)) for i, name in enumerate(physical)]))
    out += [
        valid_from.alias(VALID_FROM),
        F.when(F.col(IS_DELETE), valid_from).otherwise(following).alias(VALID_TO),
        (following.isNull() & ~F.col(IS_DELETE)).alias(IS_CURRENT),
        F.col(ORDER_KEY),
        F.col(OP),
        known.alias(KNOWN),
    ]
    return staged.select(*out)


def apply(
    spark: SparkSession,
    uri: str,
    *,
    new_events: DataFrame,
    physical: list[str],
    types: dict[str, DataType],
    key_index: list[int],
    closings: Sequence[Truncation] = (),
    app_id: str,
    batch_id: int,
) -> None:
    """Add the batch's events to the history table, recomputing the versions of the keys they touch.

    ``closings``: the TRUNCATEs (sequence, ``ts_ms``) the batch knows, oldest first. An event older than one
    of them is a version closed by a ``TRUNCATE`` row at the first one after it, wherever the batch
    boundaries fell (``close_all`` closed the versions stored before the TRUNCATE arrived)."""
    keys = [f"_v{i}" for i in key_index]
    fresh = new_events.select(
        ORDER_KEY, OP, IS_DELETE, TS_MS, *[c for i in range(len(physical)) for c in (f"_v{i}", f"_k{i}")]
    )
    for k in keys:
        fresh = fresh.where(F.col(k).isNotNull())
    stored = _stored_as_events(spark.read.format("delta").load(uri), physical, types, key_index)
    touched = stored.join(fresh.select(*keys).distinct(), on=keys, how="left_semi")
    _recompute(
        spark,
        uri,
        fresh=fresh,
        stored=touched,
        key_index=key_index,
        physical=physical,
        closings=closings,
        app_id=app_id,
        batch_id=batch_id,
    )


_FROM: Final = "_from"


def _recompute(
    spark: SparkSession,
    uri: str,
    *,
    fresh: DataFrame,
    stored: DataFrame,
    key_index: list[int],
    physical: list[str],
    closings: Sequence[Truncation],
    app_id: str,
    batch_id: int,
) -> None:
    """The versions of the keys of ``fresh`` (new events) and ``stored`` (their stored versions, as events)
    computed again, closed by ``closings`` where an event is older than one, and MERGEd into the table."""
    keys = [f"_v{i}" for i in key_index]
    key_names = [physical[i] for i in key_index]
    # One row per (key, event): the batch's own before a stored copy (a closing row knows no column).
    first = Window.partitionBy(*keys, ORDER_KEY).orderBy(_FROM)
    replay = fresh.withColumn(_FROM, F.lit(0)).unionByName(stored.withColumn(_FROM, F.lit(1)))
    if closings:
        # Closing rows from every event of the keys, stored or new: the same rows whichever batch brought
        # the events (a stored TRUNCATE row of the same sequence is the same row: the stored one is kept).
        events = replay.where(F.col(OP) != "TRUNCATE").drop(_FROM)
        replay = replay.unionByName(
            _closing_rows(events, closings, len(physical), key_index).withColumn(_FROM, F.lit(2))
        )
    replay = replay.withColumn("_first", F.row_number().over(first)).where(F.col("_first") == 1)
    replay = replay.drop(_FROM, "_first")
    if closings:
        # A TRUNCATE closes a version: none where the key's previous event deleted it (or there is none).
        previous = F.lag(IS_DELETE).over(Window.partitionBy(*keys).orderBy(ORDER_KEY))
        closes = ~(F.col(OP) == "TRUNCATE") | ~F.coalesce(previous, F.lit(True))
        replay = replay.withColumn("_closes", closes).where(F.col("_closes")).drop("_closes")
    rows = versions(replay, physical, key_index)
    # A stored closing row the replay dropped goes: a DELETE older than its TRUNCATE came in a later batch than
    # the TRUNCATE (which closed the version the DELETE now closes). A table with no TRUNCATE known (no
    # ``closings``: not even the mirror's last one) stores no closing row, so the anti-join is skipped.
    stale = None
    if closings:
        stale = (
            stored.where(F.col(OP) == "TRUNCATE")
            .select(*keys, ORDER_KEY)
            .join(replay.select(*keys, ORDER_KEY), on=[*keys, ORDER_KEY], how="left_anti")
            .select(*[F.col(f"_v{i}").alias(physical[i]) for i in key_index], ORDER_KEY)
        )
    _upsert(spark, uri, rows, key_names, stale=stale, app_id=app_id, batch_id=batch_id)


def _closing_rows(events: DataFrame, closings: Sequence[Truncation], width: int, key_index: list[int]) -> DataFrame:
    """For each key with an event older than a TRUNCATE in ``closings``, that TRUNCATE's closing row (as an
    event: it knows only the key) at the first TRUNCATE after the event; its time is the TRUNCATE's ``ts_ms``,
    else (unknown) the key's last event before it."""
    closed_by = F.lit(None).cast(StringType())
    at = F.lit(None).cast(LongType())
    for sequence, ts_ms in reversed(closings):  # the first TRUNCATE after the event wins: tested last
        older = F.col(ORDER_KEY) < F.lit(sequence)
        closed_by = F.when(older, F.lit(sequence)).otherwise(closed_by)
        at = F.when(older, F.lit(ts_ms).cast(LongType())).otherwise(at)
    keys = [f"_v{i}" for i in key_index]
    grouped = (
        events.select(*keys, closed_by.alias(ORDER_KEY), at.alias("_at"), TS_MS)
        .where(F.col(ORDER_KEY).isNotNull())
        .groupBy(*keys, ORDER_KEY)
        .agg(F.coalesce(F.first("_at"), F.max(TS_MS)).alias(TS_MS))
    )
    types = dict(events.dtypes)
    selected: list[Column] = [F.col(ORDER_KEY), F.lit("TRUNCATE").alias(OP), F.lit(True).alias(IS_DELETE), F.col(TS_MS)]
    for i in range(width):
        value = F.col(f"_v{i}") if i in key_index else F.lit(None).cast(types[f"_v{i}"])
        selected += [value.alias(f"_v{i}"), F.lit(i in key_index).alias(f"_k{i}")]
    return grouped.select(*selected)


_DROP: Final = "_drop"


def _upsert(
    spark: SparkSession,
    uri: str,
    rows: DataFrame,
    key: list[str],
    *,
    stale: DataFrame | None,
    app_id: str,
    batch_id: int,
) -> None:
    """MERGE on (key, ``_binlake_order_key``): a stored version is rewritten, a new one inserted, a ``stale``
    one (its key and order key) deleted.

    The source is checkpointed first: it reads the target itself, and the MERGE
    (which the session tells not to materialize its source) reads it twice.
    """
    columns = rows.columns
    source = rows.withColumn(_DROP, F.lit(False))
    if stale is not None:
        source = source.unionByName(stale.withColumn(_DROP, F.lit(True)), allowMissingColumns=True)
    source = source.localCheckpoint(eager=True)
    try:
        _merge(spark, uri, source, key, columns, app_id=app_id, batch_id=batch_id)
    finally:
        delta.release(source)


def _merge(
    spark: SparkSession, uri: str, source: DataFrame, key: list[str], columns: list[str], *, app_id: str, batch_id: int
) -> None:
    condition = " AND ".join([f"t.{quote(k)} = s.{quote(k)}" for k in key] + [f"t.{ORDER_KEY} = s.{ORDER_KEY}"])
    assignments: dict[str, str | Column] = {quote(name): f"s.{quote(name)}" for name in columns}
    with delta.idempotent_dml(spark, app_id, batch_id):
        (
            DeltaTable.forPath(spark, uri)
            .alias("t")
            .merge(source.alias("s"), condition)
            .whenMatchedDelete(condition=f"s.{_DROP}")
            .whenMatchedUpdate(condition=f"NOT s.{_DROP}", set=assignments)
            .whenNotMatchedInsert(condition=f"NOT s.{_DROP}", values=assignments)
            .execute()
        )


def close_all(
    spark: SparkSession, uri: str, *, truncated_at: str, ts_ms: int | None, app_id: str, batch_id: int
) -> None:
    """TRUNCATE: every key with a version older than it is closed by a ``TRUNCATE`` row at it, and its
    versions after it start from nothing (``_recompute``), as when the TRUNCATE arrives before them."""
    schema = delta.schema(spark, uri)
    key: list[str] = json.loads(delta.properties(spark, uri).get(PROP_KEY, "[]"))
    physical = [f.name for f in schema.fields if f.name not in EXTRA]
    types = {f.name: f.dataType for f in schema.fields}
    key_index = [physical.index(k) for k in key]
    table = spark.read.format("delta").load(uri)
    # Keys a TRUNCATE changes: one whose last version before it is open (current, or followed by versions
    # after it); a key closed before it (deleted, or by an older TRUNCATE) and not seen since is left alone.
    older = F.col(ORDER_KEY) < F.lit(truncated_at)
    keys = table.groupBy(*[quote(k) for k in key]).agg(
        F.max(F.when(older, F.col(ORDER_KEY))).alias("_before"),
        F.max(F.col(ORDER_KEY)).alias("_last"),
        F.max_by(F.col(IS_CURRENT), F.col(ORDER_KEY)).alias("_current"),
    )
    changed = keys.where(F.col("_before").isNotNull() & ((F.col("_last") > F.lit(truncated_at)) | F.col("_current")))
    stored = _stored_as_events(
        table.join(changed.select(*[quote(k) for k in key]), on=key, how="left_semi"), physical, types, key_index
    )
    fresh = stored.limit(0)
    _recompute(
        spark,
        uri,
        fresh=fresh,
        stored=stored,
        key_index=key_index,
        physical=physical,
        closings=[(truncated_at, ts_ms)],
        app_id=app_id,
        batch_id=batch_id,
    )
