"""One fold for every keyed table of a mirror batch: per (table, key) what the batch knows of it.

A fold per table costs a few Spark jobs of fixed cost (a scan, code generated
for the table's own projection, an aggregation, a checkpoint), whatever the
table's number of rows: a batch touching 100 small tables paid it 100 times.
This fold is one aggregation over the row events of all the batch's keyed
tables, generic in their columns: the aggregate ``binlake_fold_key``
(``io.binlake.spark.KeyFold`` in the sink's jar) folds each (table, key)'s events
(each image still the bytes the event holds it in, ``rows.value_images``: the
fold reads its columns' value unions there and copies a value only where it
becomes a column's newest) and keeps

- per physical column: the newest value known (the value of the newest event
  whose image holds the column) and that event's sequence;
- the newest sequence, whether the newest event is a DELETE, and the newest
  DELETE's sequence.

Each task folds the events it reads, so a key changed a million times in one
batch costs one row per task, not a list of its events. Exploding each image
into (column, value) rows and aggregating them in SQL did the same with two
sorts of ten times as many rows: three to four times slower. Folding the images
as value structs (twelve members each) spent most of the fold building and
serializing them, and as maps of value bytes a third of it converting each map
for the aggregate; a value left as bytes becomes a struct only if it remains.

A table's rows are then one projection of the checkpointed result
(``table_rows``): each physical column's value decoded (``binlake_decode_value``)
and converted to its mirror type (``typemap.convert``), in the ``_v{i}``/``_o{i}`` columns the MERGE reads
(``merge.merge``).

Which physical column an image's column fills is the batch's plan (``plan``):
the routes (``routes_text``), per table, by logical column or, where a table's
descriptors route differently (a type changed mid-batch), by (descriptor,
logical column). A column fills every physical column of its logical column:
the routed one with its value, the others with NULL (a column moved to a
fallback column empties the old one); a column no route stores is dropped.
Grouping is by the key's values (``_key_of``: the mirror's key columns' value
bytes, ``binlake_image_key``; Avro's binary encoding is canonical, so equal values have equal bytes);
integer widths share one union branch, so widening a key column keeps its keys
equal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType

from binlake.spark_sink.events import decoder
from binlake.spark_sink.events.order import sequence_sql
from binlake.spark_sink.events.rows import AFTER_BYTES, BEFORE_BYTES, value_images
from binlake.spark_sink.layout import ORDER_KEY
from binlake.spark_sink.mirror import tombstones
from binlake.spark_sink.mirror.merge_rules import LAST_DELETE
from binlake.spark_sink.mirror.plan import Descriptor, Plan
from binlake.spark_sink.mirror.project import DESC, IMAGE, with_descriptor_id
from binlake.spark_sink.mirror.typemap import convert, sql_string

TABLE: Final = "source_table"
KEY: Final = "_key"
"""The key's values as their unions' bytes (an array): the grouping key of the fold."""
KEY_NAMES: Final = "_key_names"
"""The table's key column names (``names_text``): the mirror's key, not necessarily the event's ``primary_key``."""
ONLY: Final = "_only"
"""The columns of an event's image the fold takes (``names_text``; NULL: all): a moved key's old key."""
COLUMNS: Final = "_cols"
"""map<physical column, struct<v: value bytes, o: sequence>>: each column's newest known value."""


@dataclass(frozen=True, slots=True)
class FoldTable:
    """A keyed table of the batch: its descriptors, plan and TRUNCATE floor (decided before the MERGEs)."""

    table: str
    descs: list[Descriptor]
    result: Plan
    key: list[str]
    """The mirror's key columns (the events' own, or configured for tables whose events name none)."""
    truncated_at: str | None


def _route_rows(item: FoldTable) -> tuple[bool, list[tuple[int, str, str, bool]]]:
    """The table's (descriptor, logical, physical, routed) rows; whether they differ by descriptor."""
    per_desc: dict[int, set[tuple[str, str, bool]]] = {}
    for desc in item.descs:
        entries: set[tuple[str, str, bool]] = set()
        for column in desc.columns:
            for phys in item.result.physical_of(column.name):
                entries.add((column.name, phys, item.result.routes.get((desc.desc_id, column.name)) == phys))
        per_desc[desc.desc_id] = entries
    distinct = {frozenset(e) for e in per_desc.values()}
    if len(distinct) <= 1:
        only = next(iter(per_desc.values()), set())
        return False, [(0, logical, phys, routed) for logical, phys, routed in sorted(only)]
    rows = [
        (desc_id, logical, phys, routed)
        for desc_id, entries in per_desc.items()
        for logical, phys, routed in sorted(entries)
    ]
    return True, rows


NULL_VALUE: Final = "X'00'"
"""A SQL NULL value's bytes (the value union's null branch)."""


def _key_of(image: str) -> str:
    """The key's values in ``image`` (an image's bytes) as an array of value bytes, NULL for a column it lacks."""
    return f"{decoder.IMAGE_KEY_FUNCTION}({image}, {KEY_NAMES})"


def _present(key: str) -> str:
    """A key's values (``_key_of``) with a column the image lacks as SQL NULL's bytes."""
    return f"transform({key}, v -> coalesce(v, {NULL_VALUE}))"


def names_text(names: list[str]) -> str:
    """Column names as ``binlake_image_key`` and ``binlake_fold_key`` read them: ``<n>:name`` each, ``n`` the
    name's length in UTF-16 units (Java's)."""
    return "".join(f"{len(name.encode('utf-16-le')) // 2}:{name}" for name in names)


def fold_all(spark: SparkSession, row_events: DataFrame, tables: list[FoldTable]) -> DataFrame:
    """The batch's row events of ``tables`` folded per (table, key), checkpointed (release it when done).

    Columns: ``source_table``, ``_key``, ``ORDER_KEY`` (newest sequence), ``_delete`` (the newest event
    is a DELETE), ``LAST_DELETE`` (newest DELETE's sequence or NULL), ``_cols`` (see ``COLUMNS``).
    """
    by_desc: list[str] = []
    routes: dict[str, str] = {}
    for item in tables:
        varies, rows = _route_rows(item)
        if varies:
            by_desc.append(item.table)
        routes[item.table] = routes_text(rows)
    names = sorted(t.table for t in tables)
    events = row_events.where(F.col(TABLE).isin(names))
    if by_desc:  # from the body's bytes, before its images are read
        events = with_descriptor_id(events).withColumn(
            DESC, F.when(F.col(TABLE).isin(by_desc), F.col(DESC)).otherwise(F.lit(0))
        )
    else:
        events = events.withColumn(DESC, F.lit(0).cast("long"))
    events = value_images(events)
    floors = {t.table: t.truncated_at for t in tables if t.truncated_at is not None}
    if floors:
        pairs = ", ".join(f"{sql_string(t)}, {sql_string(at)}" for t, at in sorted(floors.items()))
        events = events.where(f"{sequence_sql()} > coalesce(map({pairs})[{TABLE}], '')")
    keys = ", ".join(f"{sql_string(t.table)}, {sql_string(names_text(t.key))}" for t in tables)
    events = events.withColumn(KEY_NAMES, F.expr(f"map({keys})[{TABLE}]"))
    is_delete = "op = 'DELETE'"
    # An UPDATE that moves a row to another key also deletes the old key, known by its key columns only.
    # (A key column absent from an image and one holding NULL, the byte 00, are alike here: no key.)
    moved = (
        f"op = 'UPDATE' AND {BEFORE_BYTES} IS NOT NULL AND {AFTER_BYTES} IS NOT NULL"
        f" AND NOT ({_present(_key_of(BEFORE_BYTES))} <=> {_present(_key_of(AFTER_BYTES))})"
    )
    image = f"CASE WHEN {is_delete} THEN {BEFORE_BYTES} ELSE {AFTER_BYTES} END"
    new = f"struct({is_delete} AS _del, {image} AS {IMAGE}, CAST(NULL AS STRING) AS {ONLY})"
    old = f"struct(true AS _del, {BEFORE_BYTES} AS {IMAGE}, {KEY_NAMES} AS {ONLY})"
    events = events.selectExpr(
        TABLE,
        DESC,
        KEY_NAMES,
        f"{sequence_sql()} AS _seq",
        f"inline(CASE WHEN {moved} THEN array({new}, {old}) ELSE array({new}) END)",
    )
    events = events.withColumn(KEY, F.expr(_key_of(IMAGE)))
    events = events.where(f"NOT exists({KEY}, v -> coalesce(v, {NULL_VALUE}) = {NULL_VALUE})")
    texts = ", ".join(f"{sql_string(t)}, {sql_string(text)}" for t, text in sorted(routes.items()))
    routes_of = f"map({texts})[{TABLE}]" if texts else "''"
    grouped = events.groupBy(TABLE, KEY).agg(
        F.expr(f"{decoder.FOLD_FUNCTION}(_seq, _del, {DESC}, {IMAGE}, {ONLY}, {routes_of}) AS _f")
    )
    folded = grouped.selectExpr(
        TABLE,
        KEY,
        f"_f.newest AS {ORDER_KEY}",
        "_f.deletes AS _delete",
        f"_f.last_delete AS {LAST_DELETE}",
        f"_f.columns AS {COLUMNS}",
    )
    return folded.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)


def _value(bytes_sql: str) -> str:
    """The value struct of a value's bytes (``binlake_decode_value``): what ``typemap.convert`` reads."""
    return f"{decoder.VALUE_FUNCTION}({bytes_sql})"


def routes_text(routes: list[tuple[int, str, str, bool]]) -> str:
    """A table's routes (descriptor, logical, physical, routed) as ``binlake_fold_key`` reads them:
    ``desc,routed,<n>:logical<n>:physical;`` per route, ``n`` a name's length in UTF-16 units (Java's)."""
    return "".join(f"{desc},{int(routed)},{names_text([logical, phys])};" for desc, logical, phys, routed in routes)


def deletes_per_table(folded: DataFrame) -> dict[str, int]:
    """How many keys each table's batch deletes (the tombstones to append): one small job."""
    counted = folded.where(f"{LAST_DELETE} IS NOT NULL").groupBy(TABLE).count().collect()
    return {row[TABLE]: int(row["count"]) for row in counted}


def table_rows(folded: DataFrame, table: str, *, result: Plan, physical: list[str], key_index: list[int]) -> DataFrame:
    """One table's folded rows in the mirror's columns: ``_v{i}`` typed values, ``_o{i}`` their sequences."""
    selected = [ORDER_KEY, "_delete", LAST_DELETE]
    for i, phys in enumerate(physical):
        entry = f"{COLUMNS}[{sql_string(phys)}]"
        selected.append(f"{convert(_value(f'{entry}.v'), result.types[phys])} AS _v{i}")
        if i not in key_index:
            selected.append(f"{entry}.o AS _o{i}")
    rows = folded.where(F.col(TABLE) == table).selectExpr(*selected)
    return rows.where(" AND ".join(f"_v{i} IS NOT NULL" for i in key_index))


def deleted_keys(folded: DataFrame, tables: list[tuple[str, list[str], list[DataType]]]) -> list[DataFrame]:
    """The keys the fold deletes of ``tables`` (table, its key columns, their mirror types) as tombstone rows
    (``tombstones.TABLE``, ``KEY``, ``ORDER_KEY``: each key's newest DELETE in the batch, also where a newer
    event inserts the key again, so the tombstones, like the mirrors, do not depend on where the batches were
    cut): one projection per list of key types, not one per table.

    A projection per table made the batch's one tombstones append a union of as many branches as tables
    with deletes, each planned and run apart (a 100-table batch spent most of its append planning them);
    tables whose keys have the same types are converted alike, their key columns picked per row by table.
    """
    groups: dict[tuple[str, ...], list[tuple[str, list[str], list[DataType]]]] = {}
    for item in tables:
        groups.setdefault(tuple(t.simpleString() for t in item[2]), []).append(item)
    frames: list[DataFrame] = []
    for _, group in sorted(groups.items()):
        types = group[0][2]
        values: list[str] = []
        for j, data_type in enumerate(types):
            column_of = ", ".join(f"{sql_string(table)}, {sql_string(key[j])}" for table, key, _ in group)
            values.append(f"{convert(_value(f'{COLUMNS}[map({column_of})[{TABLE}]].v'), data_type)} AS _k{j}")
        names = sorted(table for table, _, _ in group)
        deleting = F.col(LAST_DELETE).isNotNull() & F.col(TABLE).isin(names)
        rows = folded.where(deleting).selectExpr(TABLE, f"{LAST_DELETE} AS {ORDER_KEY}", *values)
        rows = rows.where(" AND ".join(f"_k{j} IS NOT NULL" for j in range(len(types))))  # as ``table_rows``
        key = tombstones.key_text_of([F.col(f"_k{j}") for j in range(len(types))], types)
        frames.append(rows.select(F.col(TABLE).alias(tombstones.TABLE), key.alias(tombstones.KEY), ORDER_KEY))
    return frames
