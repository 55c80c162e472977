"""Each keyed mirror row's column sequences: which event each column's value comes from.

A row holds ``_binlake_order_key``, the newest event applied to its key, and each column's value comes
from the newest event that knew the column (or is NULL since a DELETE or TRUNCATE emptied it). The columns
whose sequence is not the row's are in the map ``_binlake_column_order``: most rows (full images) hold an
empty map. A column added to the mirror after the row was written was never known to it: ``_binlake_width``
says how many physical columns (in the mirror's schema order) the row was written with; columns past it
have the sequence ``""`` (older than every event). Rows an earlier release wrote have neither: their columns
all carry the row's sequence, and their width is the table property ``binlake.width``.
"""

from __future__ import annotations

import json
from typing import Final

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql.types import IntegerType, MapType, StringType, StructField

from binlake.spark_sink import delta
from binlake.spark_sink.delta import quote
from binlake.spark_sink.layout import COLUMN_ORDER, HIDDEN, ORDER_KEY, PROP_KEY, PROP_WIDTH, WIDTH
from binlake.spark_sink.mirror.typemap import sql_string

STATE_COLUMNS: Final = (COLUMN_ORDER, WIDTH)
"""The hidden columns that hold a keyed mirror row's column sequences."""
EMPTY_ORDER: Final = "CAST(map() AS MAP<STRING, STRING>)"


def fields() -> list[StructField]:
    """The state columns of a keyed mirror's schema."""
    return [StructField(COLUMN_ORDER, MapType(StringType(), StringType())), StructField(WIDTH, IntegerType())]


def column_sequence(alias: str, name: str, index: int, *, legacy_width: int) -> str:
    """SQL: the sequence of physical column ``name`` (at ``index`` in the schema's order) in row ``alias``."""
    return (
        f"CASE WHEN coalesce({alias}.{WIDTH}, {legacy_width}) <= {index} THEN ''"
        f" ELSE coalesce({alias}.{COLUMN_ORDER}[{sql_string(name)}], {alias}.{ORDER_KEY}) END"
    )


def order_map(sequences: list[tuple[str, str]], row: str) -> str:
    """SQL: ``COLUMN_ORDER``'s value from (column, its sequence) pairs: the columns whose sequence is not the
    row's ``row``."""
    if not sequences:
        return EMPTY_ORDER
    pairs = ", ".join(f"{sql_string(name)}, {sequence}" for name, sequence in sequences)
    return f"map_filter(map({pairs}), (k, v) -> v <> {row})"


def legacy_width(properties: dict[str, str], physical: list[str]) -> int:
    """The width of a mirror's rows that have none (an earlier release's): ``binlake.width``, else every
    physical column (a mirror this release made has no such rows)."""
    found = properties.get(PROP_WIDTH)
    return int(found) if found is not None else len(physical)


def column_sequences(spark: SparkSession, uri: str) -> DataFrame:
    """Every row's key, and each non-key column's sequence (``column -> sequence``, a map), of a keyed mirror."""
    frame = spark.read.format("delta").load(uri)
    physical = [f.name for f in frame.schema.fields if f.name not in HIDDEN]
    props = delta.properties(spark, uri)
    key: list[str] = json.loads(props.get(PROP_KEY, "[]"))
    width = legacy_width(props, physical)
    pairs = ", ".join(
        f"{sql_string(name)}, {column_sequence('t', name, i, legacy_width=width)}"
        for i, name in enumerate(physical)
        if name not in key
    )
    return frame.alias("t").selectExpr(*[quote(k) for k in key], ORDER_KEY, f"map({pairs}) AS _sequences")


def truncation(physical: list[str], key: list[str], *, at: str, legacy_width: int) -> dict[str, str]:
    """A TRUNCATE at sequence ``at`` of a keyed mirror's row ``t`` that stays (newer than it): quoted column ->
    its value after. Its columns older than the TRUNCATE are emptied, and their sequence becomes ``""``: every
    event not newer than a TRUNCATE is ignored from then on, so nothing tells the two apart."""
    after: dict[str, str] = {quote(WIDTH): str(len(physical))}
    sequences: list[tuple[str, str]] = []
    for i, name in enumerate(physical):
        if name in key:
            continue
        known = column_sequence("t", name, i, legacy_width=legacy_width)
        emptied = f"{known} < {sql_string(at)}"
        after[quote(name)] = f"CASE WHEN {emptied} THEN NULL ELSE t.{quote(name)} END"
        sequences.append((name, f"CASE WHEN {emptied} THEN '' ELSE {known} END"))
    after[quote(COLUMN_ORDER)] = order_map(sequences, f"t.{ORDER_KEY}")
    return after


def truncated(frame: DataFrame, at: str, *, key: list[str], legacy_width: int) -> DataFrame:
    """A keyed mirror's rows (``frame``, its columns) as a TRUNCATE at ``at`` leaves them (``truncation``)."""
    physical = [name for name in frame.columns if name not in HIDDEN]
    after = truncation(physical, key, at=at, legacy_width=legacy_width)
    kept = frame.alias("t").where(f"{ORDER_KEY} >= {sql_string(at)}")
    return kept.selectExpr(
        *[f"{after.get(quote(name), f't.{quote(name)}')} AS {quote(name)}" for name in frame.columns]
    )


def truncate(spark: SparkSession, uri: str, at: str) -> None:
    """A TRUNCATE at sequence ``at`` of an existing mirror, in one commit: rows older than it go, and each
    keyed row that stays empties its columns older than it (``truncation``)."""
    table = DeltaTable.forPath(spark, uri)
    older = f"{ORDER_KEY} < {sql_string(at)}"
    names = [f.name for f in delta.schema(spark, uri).fields]
    props = delta.properties(spark, uri)
    key: list[str] = json.loads(props.get(PROP_KEY, "[]"))
    if not key or COLUMN_ORDER not in names:
        table.delete(older)  # key-less: whole rows (a keyed mirror has its state columns from ``schema.prepare``)
        return
    physical = [name for name in names if name not in HIDDEN]
    update: dict[str, str | Column] = dict(truncation(physical, key, at=at, legacy_width=legacy_width(props, physical)))
    stale = f"exists(map_values({COLUMN_ORDER}), v -> v <> '' AND v < {sql_string(at)})"
    version = delta.current_version(spark, uri)
    assert version is not None, uri
    source = delta.read_at(spark, uri, version).where(f"{older} OR {stale}").select(*[quote(k) for k in key])
    condition = " AND ".join(f"t.{quote(k)} = s.{quote(k)}" for k in key)
    (
        table.alias("t")
        .merge(source.alias("s"), condition)
        .whenMatchedDelete(condition=f"t.{older}")
        .whenMatchedUpdate(set=update)
        .execute()
    )
