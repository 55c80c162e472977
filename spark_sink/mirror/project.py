"""One row per row event, in the mirror's physical columns: ``_v{i}`` (typed value) and ``_k{i}`` (known).

A micro-batch may describe one table with several column descriptors (a
column added mid-batch, a type that changed); each event is projected through
its own descriptor (``_desc``, a hash of its ``columns`` and ``primary_key``),
so a value always goes to the physical column its type routes to, and a column
its descriptor does not list is unknown (``_k{i}`` false), never NULL.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from spark_sink.events.order import sequence_sql
from spark_sink.layout import OP, ORDER_KEY
from spark_sink.mirror.plan import Descriptor, Plan
from spark_sink.mirror.typemap import convert, sql_string

DESC: Final = "_desc"
IS_DELETE: Final = "_is_delete"
TS_MS: Final = "_ts_ms"
IMAGE: Final = "_image"
LAST_DELETE: Final = "_ld"
"""The folded row's newest DELETE in the batch (its sequence), NULL when the batch deletes nothing."""


def with_descriptor_id(rows: DataFrame) -> DataFrame:
    return rows.withColumn(DESC, F.xxhash64(F.to_json("columns"), F.to_json("primary_key")))


def _by_descriptor(descs: list[Descriptor], pick: dict[int, str], default: str) -> str:
    if len(descs) == 1:
        return pick.get(descs[0].desc_id, default)
    branches = " ".join(f"WHEN {DESC} = {_long(d.desc_id)} THEN {pick.get(d.desc_id, default)}" for d in descs)
    return f"CASE {branches} ELSE {default} END"


def _long(value: int) -> str:
    """A BIGINT literal (the smallest long has no positive literal to negate)."""
    return f"({value + 1}L - 1L)" if value == -(2**63) else f"{value}L"


def projection(
    image: str,
    is_delete: str,
    *,
    descs: list[Descriptor],
    result: Plan,
    physical: list[str],
    only: set[int] | None = None,
    carry: tuple[str, ...] = (),
    op: str = "op",
) -> list[str]:
    """``order_key``, op, delete flag, event time and (``_v{i}``, ``_k{i}``) for each physical column.

    SQL expressions (``expr AS name``) over the decoded changelog rows: ``image`` (the image map),
    ``is_delete`` and ``op`` are SQL too (see ``typemap.convert`` for why text). With ``only``, the
    other columns are unknown (a DELETE of a moved key needs only the key). ``carry``: more
    expressions to keep.
    """
    described = {d.desc_id: {c.name for c in d.columns} for d in descs}
    selected = [
        f"{sequence_sql()} AS {ORDER_KEY}",
        f"{op} AS {OP}",
        f"({is_delete}) AS {IS_DELETE}",
        f"coalesce(ts_ms, unix_millis(_kafka_timestamp)) AS {TS_MS}",
        *carry,
    ]
    for i, phys in enumerate(physical):
        logical = result.logical[phys]
        target: DataType = result.types[phys]
        null = f"CAST(NULL AS {target.simpleString()})"
        if only is not None and i not in only:
            selected += [f"{null} AS _v{i}", f"false AS _k{i}"]
            continue
        values: dict[int, str] = {}
        known: dict[int, str] = {}
        key = sql_string(logical)
        for desc in descs:
            if logical not in described[desc.desc_id]:
                continue
            known[desc.desc_id] = f"map_contains_key({image}, {key})"
            if result.routes.get((desc.desc_id, logical)) == phys:
                values[desc.desc_id] = convert(f"{image}[{key}]", target)
        selected.append(f"{_by_descriptor(descs, values, null)} AS _v{i}")
        selected.append(f"{_by_descriptor(descs, known, 'false')} AS _k{i}")
    return selected


def project(
    events: DataFrame,
    image: str,
    is_delete: str,
    *,
    descs: list[Descriptor],
    result: Plan,
    physical: list[str],
    carry: tuple[str, ...] = (),
) -> DataFrame:
    """``events`` as the rows of ``projection`` (one ``selectExpr``)."""
    return events.selectExpr(*projection(image, is_delete, descs=descs, result=result, physical=physical, carry=carry))


def project_with_moves(
    events: DataFrame,
    image: str,
    is_delete: str,
    *,
    moved: str,
    descs: list[Descriptor],
    result: Plan,
    physical: list[str],
    only: set[int] | None = None,
) -> DataFrame:
    """``project``, plus for each event where ``moved`` holds (an UPDATE that changes the key) a DELETE of
    the old key, projected from ``before`` (``only``: the columns it needs, see ``projection``).

    One pass over ``events`` (a generator over one or two structs per event): ``events`` decodes the
    Avro bodies, and a union of two projections would decode each body twice.
    """
    new = ", ".join(projection(image, is_delete, descs=descs, result=result, physical=physical))
    old = ", ".join(
        projection("before", "true", descs=descs, result=result, physical=physical, only=only, op="'DELETE'")
    )
    both = f"array(struct({new}), struct({old}))"
    return events.selectExpr(f"inline(CASE WHEN {moved} THEN {both} ELSE array(struct({new})) END)")
