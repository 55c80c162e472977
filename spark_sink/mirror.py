"""Mirror (silver) tables: one Delta table per source table, kept equal to the source.

Per micro-batch and table: the row events (INSERT, UPDATE, DELETE, SNAPSHOT,
UPSERT) are folded per primary key in ``order_key`` order: a key whose last
event is a DELETE is deleted; otherwise each column takes its value from the
last event that knows it (absent from the image = unknown = untouched), and
columns of a row deleted earlier in the same batch restart from NULL. The
result is MERGEd into the mirror; a key whose ``_binlake_order_key`` is not
older than the batch's is left alone (an old event never overwrites a newer
state). An UPDATE that changes the key deletes the old key. Tables without a
primary key get every row event appended (with ``_binlake_op``). TRUNCATE and
DDL events are kept in the changelog only.
"""

from __future__ import annotations

import json
from typing import Final

from delta.tables import DeltaTable
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from shared.event.model import ROW_OPS
from spark_sink import delta_tables
from spark_sink.delta_tables import quote
from spark_sink.mirror_plan import (
    OP,
    ORDER_KEY,
    PROP_FALLBACKS,
    PROP_KEY,
    ColumnDesc,
    Descriptor,
    Plan,
    choose_key,
    plan,
)
from spark_sink.settings import SinkSettings
from spark_sink.typemap import convert

DESC: Final = "_desc"
_IS_DELETE: Final = "_is_delete"


def with_descriptor_id(rows: DataFrame) -> DataFrame:
    return rows.withColumn(DESC, F.xxhash64(F.to_json("columns"), F.to_json("primary_key")))


def descriptors(rows: DataFrame) -> dict[str, list[Descriptor]]:
    """Each source table's distinct column descriptors in this batch (a handful: collected to the driver)."""
    found: dict[str, list[Descriptor]] = {}
    distinct = rows.select("source_table", DESC, "columns", "primary_key").dropDuplicates(["source_table", DESC])
    for row in distinct.collect():
        columns = tuple(
            ColumnDesc(c["name"], c["logical_type"], c["precision"], c["scale"]) for c in row["columns"] or []
        )
        found.setdefault(row["source_table"], []).append(
            Descriptor(int(row[DESC]), columns, tuple(row["primary_key"] or []))
        )
    for values in found.values():
        values.sort(key=lambda d: d.desc_id)
    return found


def apply(spark: SparkSession, settings: SinkSettings, rows: DataFrame, app_id: str, batch_id: int) -> list[str]:
    """Apply a batch's new changelog rows to the mirrors; return the tables touched."""
    row_events = with_descriptor_id(rows.where(F.col("op").isin(sorted(ROW_OPS))))
    tables = descriptors(row_events)
    for table in sorted(tables):
        events = row_events.where(F.col("source_table") == table)
        _apply_table(spark, settings, table, descs=tables[table], events=events, app_id=app_id, batch_id=batch_id)
    return sorted(tables)


# ---------------------------------------------------------------- schema


def _prepare(
    spark: SparkSession, settings: SinkSettings, table: str, descs: list[Descriptor]
) -> tuple[Plan, list[str]]:
    """Create or evolve the mirror's schema for this batch; return the column plan and the key."""
    uri = settings.mirror_uri(table)
    if not delta_tables.exists(spark, uri):
        key = choose_key(table, None, descs, settings.primary_keys)
        result = plan({}, {}, descs, widening=settings.type_widening)
        ordered = key + [name for name in result.types if name not in key]
        fields = [StructField(name, result.types[name], nullable=name not in key) for name in ordered]
        fields.append(StructField(ORDER_KEY, StringType()))
        if not key:
            fields.append(StructField(OP, StringType()))
        props = {PROP_KEY: json.dumps(key), PROP_FALLBACKS: json.dumps(result.fallbacks)}
        if settings.type_widening:
            props["delta.enableTypeWidening"] = "true"
        delta_tables.create(spark, uri, StructType(fields), properties=props)
        return result, key
    props = delta_tables.properties(spark, uri)
    key = choose_key(table, json.loads(props.get(PROP_KEY, "[]")), descs, settings.primary_keys)
    fallbacks: dict[str, str] = json.loads(props.get(PROP_FALLBACKS, "{}"))
    existing = {f.name: f.dataType for f in delta_tables.schema(spark, uri).fields}
    refused: set[str] = set()
    while True:
        result = plan(existing, fallbacks, descs, widening=settings.type_widening, no_widen=frozenset(refused))
        failed = False
        for name, wider in result.widened.items():
            try:
                delta_tables.change_type(spark, uri, name, wider)
            except AnalysisException:
                refused.add(name)  # Delta cannot widen this pair: use a fallback column instead
                failed = True
        if not failed:
            break
        existing = {f.name: f.dataType for f in delta_tables.schema(spark, uri).fields}
    delta_tables.add_columns(spark, uri, [(name, result.types[name]) for name in result.added])
    if result.fallbacks != fallbacks:
        delta_tables.set_properties(spark, uri, {PROP_FALLBACKS: json.dumps(result.fallbacks)})
    return result, key


# ---------------------------------------------------------------- projection


def _by_descriptor(descs: list[Descriptor], pick: dict[int, Column], default: Column) -> Column:
    if len(descs) == 1:
        return pick.get(descs[0].desc_id, default)
    out: Column | None = None
    for desc in descs:
        value = pick.get(desc.desc_id, default)
        condition = F.col(DESC) == F.lit(desc.desc_id)
        out = F.when(condition, value) if out is None else out.when(condition, value)
    assert out is not None
    return out.otherwise(default)


def _project(
    events: DataFrame, image: Column, is_delete: Column, *, descs: list[Descriptor], result: Plan, physical: list[str]
) -> DataFrame:
    """One row per event: ``_v{i}``/``_k{i}`` (value, known) for each physical column."""
    described = {d.desc_id: {c.name for c in d.columns} for d in descs}
    selected: list[Column] = [F.col("order_key").alias(ORDER_KEY), F.col("op").alias(OP), is_delete.alias(_IS_DELETE)]
    for i, phys in enumerate(physical):
        logical = result.logical[phys]
        target: DataType = result.types[phys]
        values: dict[int, Column] = {}
        known: dict[int, Column] = {}
        for desc in descs:
            if logical not in described[desc.desc_id]:
                continue
            known[desc.desc_id] = F.map_contains_key(image, logical)
            if result.routes.get((desc.desc_id, logical)) == phys:
                values[desc.desc_id] = convert(image[logical], target)
        null = F.lit(None).cast(target)
        selected.append(_by_descriptor(descs, values, null).alias(f"_v{i}"))
        selected.append(_by_descriptor(descs, known, F.lit(False)).alias(f"_k{i}"))
    return events.select(*selected)


def _apply_table(
    spark: SparkSession,
    settings: SinkSettings,
    table: str,
    *,
    descs: list[Descriptor],
    events: DataFrame,
    app_id: str,
    batch_id: int,
) -> None:
    result, key = _prepare(spark, settings, table, descs)
    uri = settings.mirror_uri(table)
    physical = list(result.types)
    is_delete = F.col("op") == "DELETE"
    image = F.when(is_delete, F.col("before")).otherwise(F.col("after"))
    projected = _project(events, image, is_delete, descs=descs, result=result, physical=physical)
    if not key:
        appended = projected.select(
            *[F.when(F.col(f"_k{i}"), F.col(f"_v{i}")).alias(phys) for i, phys in enumerate(physical)],
            ORDER_KEY,
            OP,
        )
        delta_tables.append(appended, uri, app_id, batch_id)
        return
    missing = [k for k in key if k not in result.types]
    if missing:
        raise ValueError(f"{table}: key columns {missing} are not described by its events")
    key_index = [physical.index(k) for k in key]
    # An UPDATE that moves a row to another key deletes the old key.
    differs = F.lit(False)
    for name in key:
        before, after = (convert(F.col(side)[name], result.types[name]) for side in ("before", "after"))
        differs = differs | ~before.eqNullSafe(after)
    moved = events.where((F.col("op") == "UPDATE") & F.col("before").isNotNull() & F.col("after").isNotNull())
    old = _project(moved.where(differs), F.col("before"), F.lit(True), descs=descs, result=result, physical=physical)
    merged = _fold(projected.unionByName(old), key_index, len(physical))
    _merge(spark, uri, source=merged, key_index=key_index, physical=physical, app_id=app_id, batch_id=batch_id)


def _fold(projected: DataFrame, key_index: list[int], width: int) -> DataFrame:
    """One row per key: the key's final state in this batch (see the module doc)."""
    keys = [f"_v{i}" for i in key_index]
    for k in keys:
        projected = projected.where(F.col(k).isNotNull())
    window = Window.partitionBy(*keys)
    ordered = projected.withColumn(
        "_last_delete", F.max(F.when(F.col(_IS_DELETE), F.col(ORDER_KEY))).over(window)
    ).withColumn("_final_delete", F.max_by(F.col(_IS_DELETE), F.col(ORDER_KEY)).over(window))
    values = [i for i in range(width) if i not in key_index]
    deletes = (
        ordered.where(F.col("_final_delete"))
        .groupBy(*keys)
        .agg(F.max(ORDER_KEY).alias(ORDER_KEY))
        .select(
            *keys,
            ORDER_KEY,
            F.lit(True).alias("_delete"),
            F.lit(False).alias("_reset"),
            *[F.lit(None).alias(f"_v{i}") for i in values],
            *[F.lit(False).alias(f"_k{i}") for i in values],
        )
    )
    live = ordered.where(~F.col("_final_delete")).where(
        F.col("_last_delete").isNull() | (F.col(ORDER_KEY) > F.col("_last_delete"))
    )
    aggregates: list[Column] = [
        F.max(ORDER_KEY).alias(ORDER_KEY),
        F.lit(False).alias("_delete"),
        F.max(F.col("_last_delete")).isNotNull().alias("_reset"),
    ]
    aggregates += [F.max_by(f"_v{i}", F.when(F.col(f"_k{i}"), F.col(ORDER_KEY))).alias(f"_v{i}") for i in values]
    aggregates += [F.bool_or(f"_k{i}").alias(f"_k{i}") for i in values]
    upserts = live.groupBy(*keys).agg(*aggregates)
    return upserts.unionByName(deletes, allowMissingColumns=False)


def _merge(
    spark: SparkSession,
    uri: str,
    *,
    source: DataFrame,
    key_index: list[int],
    physical: list[str],
    app_id: str,
    batch_id: int,
) -> None:
    target_columns = [f.name for f in delta_tables.schema(spark, uri).fields]
    condition = " AND ".join(f"t.{quote(physical[i])} = s._v{i}" for i in key_index)
    newer = f"coalesce(t.{ORDER_KEY}, '') < s.{ORDER_KEY}"
    index = {phys: i for i, phys in enumerate(physical)}
    update: dict[str, str | Column] = {ORDER_KEY: f"s.{ORDER_KEY}"}
    insert: dict[str, str | Column] = {ORDER_KEY: f"s.{ORDER_KEY}"}
    for name in target_columns:
        if name == ORDER_KEY or name not in index:
            if name != ORDER_KEY:
                update[quote(name)] = f"CASE WHEN s._reset THEN NULL ELSE t.{quote(name)} END"
            continue
        i = index[name]
        if i in key_index:
            insert[quote(name)] = f"s._v{i}"
            continue
        update[quote(name)] = f"CASE WHEN s._k{i} THEN s._v{i} WHEN s._reset THEN NULL ELSE t.{quote(name)} END"
        insert[quote(name)] = f"CASE WHEN s._k{i} THEN s._v{i} END"
    with delta_tables.idempotent_dml(spark, app_id, batch_id):
        (
            DeltaTable.forPath(spark, uri)
            .alias("t")
            .merge(source.alias("s"), condition)
            .whenMatchedDelete(condition=f"s._delete AND {newer}")
            .whenMatchedUpdate(condition=f"NOT s._delete AND {newer}", set=update)
            .whenNotMatchedInsert(condition="NOT s._delete", values=insert)
            .execute()
        )
