"""One row per row event, in the mirror's physical columns: ``_v{i}`` (typed value) and ``_k{i}`` (known).

A micro-batch may describe one table with several column descriptors (a
column added mid-batch, a type that changed); each event is projected through
its own descriptor (``_desc``, a hash of its ``columns`` and ``primary_key``),
so a value always goes to the physical column its type routes to, and a column
its descriptor does not list is unknown (``_k{i}`` false), never NULL.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from spark_sink.mirror_plan import OP, ORDER_KEY, Descriptor, Plan
from spark_sink.typemap import convert

DESC: Final = "_desc"
IS_DELETE: Final = "_is_delete"
TS_MS: Final = "_ts_ms"


def with_descriptor_id(rows: DataFrame) -> DataFrame:
    return rows.withColumn(DESC, F.xxhash64(F.to_json("columns"), F.to_json("primary_key")))


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


def project(
    events: DataFrame,
    image: Column,
    is_delete: Column,
    *,
    descs: list[Descriptor],
    result: Plan,
    physical: list[str],
    only: set[int] | None = None,
) -> DataFrame:
    """``order_key``, op, delete flag, event time and (``_v{i}``, ``_k{i}``) for each physical column.

    With ``only``, the other columns are unknown (a DELETE of a moved key needs only the key).
    """
    described = {d.desc_id: {c.name for c in d.columns} for d in descs}
    event_time = F.coalesce(F.col("ts_ms"), F.unix_millis("_kafka_timestamp"))
    selected: list[Column] = [
        F.col("order_key").alias(ORDER_KEY),
        F.col("op").alias(OP),
        is_delete.alias(IS_DELETE),
        event_time.alias(TS_MS),
    ]
    for i, phys in enumerate(physical):
        logical = result.logical[phys]
        target: DataType = result.types[phys]
        if only is not None and i not in only:
            selected += [F.lit(None).cast(target).alias(f"_v{i}"), F.lit(False).alias(f"_k{i}")]
            continue
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
