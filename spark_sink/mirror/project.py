"""One row per row event, in the mirror's physical columns: ``_v{i}`` (typed value) and ``_k{i}`` (known).

A micro-batch may describe one table with several column descriptors (a
column added mid-batch, a type that changed); each event is projected through
its own descriptor (``_desc``, a hash of its ``columns`` and ``primary_key``),
so a value always goes to the physical column its type routes to, and a column
its descriptor does not list is unknown (``_k{i}`` false), never NULL.

The projection's size is linear in the columns, not in columns x descriptors: a
format without types (Maxwell) types each value on its own, so a column that is
NULL in one event and a string in the next gives a table as many descriptors as
combinations of NULL columns, a thousand in one batch of 9,000 events. A CASE
over every descriptor for every column made plans of millions of expressions
(a 3 GB driver heap ran out planning one such batch). Each physical column asks
instead only whether the event's descriptor is among the few that route
elsewhere (``_member``), which is usually no descriptor at all.
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from binlake.spark_sink.events import decoder
from binlake.spark_sink.events.order import sequence_sql
from binlake.spark_sink.layout import BODY, OP, ORDER_KEY
from binlake.spark_sink.mirror.plan import Descriptor, Plan
from binlake.spark_sink.mirror.typemap import convert, sql_string

DESC: Final = "_desc"
IS_DELETE: Final = "_is_delete"
TS_MS: Final = "_ts_ms"
IMAGE: Final = "_image"


def with_descriptor_id(rows: DataFrame) -> DataFrame:
    """``rows`` with their column descriptor id (``DESC``): from the Avro body's bytes where the changelog keeps
    it (version 2, ``decoder.descriptor_id``: no decoding), else from the decoded descriptor (version 1). The
    ids only group one batch's events, so the two layouts need not agree."""
    if BODY in rows.columns:
        return rows.withColumn(DESC, decoder.descriptor_id(BODY))
    return rows.withColumn(DESC, F.xxhash64(F.to_json("columns"), F.to_json("primary_key")))


def _member(inside: set[int], everyone: list[int]) -> str:
    """SQL: the row's descriptor is in ``inside`` (a subset of ``everyone``), by the shorter of it and its
    complement: "true" or "false" when either is empty (a literal the optimizer folds away)."""
    outside = [d for d in everyone if d not in inside]
    if not outside:
        return "true"
    if not inside:
        return "false"
    if len(inside) <= len(outside):
        return f"{DESC} IN ({', '.join(_long(d) for d in sorted(inside))})"
    return f"NOT ({DESC} IN ({', '.join(_long(d) for d in sorted(outside))}))"


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
    carry: tuple[str, ...] = (),
    op: str = "op",
) -> list[str]:
    """``order_key``, op, delete flag, event time and (``_v{i}``, ``_k{i}``) for each physical column.

    SQL expressions (``expr AS name``) over the decoded changelog rows: ``image`` (the image map),
    ``is_delete`` and ``op`` are SQL too (see ``typemap.convert`` for why text). ``carry``: more
    expressions to keep.
    """
    everyone = [d.desc_id for d in descs]
    described: dict[str, set[int]] = {}
    for desc in descs:
        for column in desc.columns:
            described.setdefault(column.name, set()).add(desc.desc_id)
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
        key = sql_string(logical)
        describing = described.get(logical, set())
        routed = {d for d in describing if result.routes.get((d, logical)) == phys}
        # Known: the descriptor lists the column and the image holds it; the value: the descriptor routes the
        # column here (another physical column of it, or none, gets NULL).
        knows = _member(describing, everyone)
        value = _member(routed, everyone)
        known_sql = (
            f"map_contains_key({image}, {key})"
            if knows == "true"
            else f"({knows}) AND map_contains_key({image}, {key})"
        )
        value_sql = convert(f"{image}[{key}]", target)
        if value == "false":
            value_sql = null
        elif value != "true":
            value_sql = f"CASE WHEN {value} THEN {value_sql} ELSE {null} END"
        selected.append(f"{value_sql} AS _v{i}")
        selected.append(f"{'false' if knows == 'false' else known_sql} AS _k{i}")
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
) -> DataFrame:
    """``project``, plus for each event where ``moved`` holds (an UPDATE that changes the key) a DELETE of
    the old key, projected from ``before``.

    One pass over ``events`` (a generator over one or two structs per event): ``events`` decodes the
    Avro bodies, and a union of two projections would decode each body twice.
    """
    new = ", ".join(projection(image, is_delete, descs=descs, result=result, physical=physical))
    old = ", ".join(projection("before", "true", descs=descs, result=result, physical=physical, op="'DELETE'"))
    both = f"array(struct({new}), struct({old}))"
    return events.selectExpr(f"inline(CASE WHEN {moved} THEN {both} ELSE array(struct({new})) END)")
