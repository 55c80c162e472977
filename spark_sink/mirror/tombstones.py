"""Tombstones: the deleted keys of every mirror, so an event older than a delete never brings the row back.

One Delta table for the whole lake, ``deleted_keys/`` (partitioned by
``source_table``), holds per delete a batch applied: the source table, the
key as text (``key_text``) and the ``order_key`` of the delete. A mirror batch
appends the deletes of all its tables in one commit: a table of its own per
source table cost each table a commit (about a second of Spark driver time)
per batch that deleted anything, the largest fixed cost after the mirror's own
write. It is append-only (an append is much cheaper than a MERGE): a key
deleted twice has two rows, and a key inserted again after its delete keeps its
old row, which is harmless: while the mirror holds the key, the mirror row's
newer ``order_key`` is the key's floor, and the tombstone's is used only for a
key the mirror does not hold (``merge.merge``). A stale DELETE (older than
the mirror row) is appended too, equally harmless, and so is a DELETE followed
by a newer event of its key in the same batch: the tombstones then hold every
key's newest DELETE, however the batches were cut. The floors are read at the
version pinned when the batch starts (``pin``), so a batch replayed after a crash
between the mirrors' commits and the tombstones' append folds the same rows
and appends the same deletes. Tombstones are kept until a TRUNCATE of their
table newer than them.

Each append adds a file per source table it holds deletes of, and a table's
floors read all its files: left alone, a batch would read more files every
time. So when the table holds more than ``tombstone_compact_files`` files
beyond one per source table, the mirror batch rewrites it (``compact``, after
its own commits): one row per deleted key (its newest delete, the only one a
floor uses), one file per source table. The floors read the same values before
and after, so a compaction is harmless to repeat and to lose: a batch replayed
after a crash that followed it skips it (its own transaction id) or, if the
crash came first, runs it again.

The key is text so that keys of every table fit one column: each key value in
a form that a type widening of its column (int -> bigint, a decimal's scale,
date -> timestamp) does not change, so a delete recorded before the widening
still finds its key after it.

Lakes written before this table existed keep a tombstone table per source
table (``tombstones/<table>/``, typed key columns): it is still read for the
floors and emptied by a TRUNCATE, and never appended to again.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from functools import reduce
from typing import Final

from delta.tables import DeltaTable
from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BinaryType,
    DataType,
    DateType,
    DecimalType,
    FloatType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from binlake.spark_sink import delta
from binlake.spark_sink.delta import quote
from binlake.spark_sink.layout import ORDER_KEY, TOMBSTONE_DELETED_AT, TOMBSTONE_KEY, TOMBSTONE_TABLE
from binlake.spark_sink.mirror.merge_rules import FLOOR

TABLE: Final = TOMBSTONE_TABLE
KEY: Final = TOMBSTONE_KEY
DELETED_AT: Final = TOMBSTONE_DELETED_AT
TEXT_KEY: Final = "_tombstone_key"
"""The column a fold's rows carry their key text in while they are joined with their floors."""


def _canonical(value: Column, data_type: DataType) -> Column:
    """One key value as text that a type widening of its column leaves unchanged."""
    if isinstance(data_type, DecimalType):
        # 1.50 as decimal(10,2) and 1.5000 as decimal(12,4) are one key: no trailing zeros after the point.
        text = value.cast("string")
        return F.when(text.contains("."), F.regexp_replace(F.regexp_replace(text, r"0+$", ""), r"\.$", "")).otherwise(
            text
        )
    if isinstance(data_type, DateType):
        return value.cast(TimestampNTZType()).cast("string")  # as a widened date -> timestamp_ntz prints it
    if isinstance(data_type, FloatType):
        return value.cast("double").cast("string")
    if isinstance(data_type, TimestampType):
        return F.unix_micros(value).cast("string")  # an instant, whatever the session's time zone
    if isinstance(data_type, BinaryType):
        return F.hex(value)
    return value.cast("string")  # integers of any width print alike; strings are themselves


def key_text(columns: list[str], types: list[DataType]) -> Column:
    """The key of a row with key columns ``columns`` (of mirror types ``types``), as the tombstones hold it."""
    return key_text_of([F.col(quote(c)) for c in columns], types)


def key_text_of(values: list[Column], types: list[DataType]) -> Column:
    """The key whose column values are ``values`` (of mirror types ``types``), as the tombstones hold it."""
    return F.to_json(F.array(*[_canonical(v, t) for v, t in zip(values, types, strict=True)]))


@dataclass(frozen=True, slots=True)
class Pinned:
    """The lake's tombstone table as a batch (or a current-state read) reads it: the version, so the batch's
    own append does not move a floor under a recomputed plan, and the source tables it holds keys of, so a
    table with none reads nothing (most tables of a batch, where few delete)."""

    uri: str
    version: int | None
    tables: frozenset[str] = frozenset()


def pin(spark: SparkSession, uri: str) -> Pinned:
    """The tombstone table at ``uri`` as of now (``Pinned``)."""
    version = delta.current_version(spark, uri)
    if version is None or not delta.holds_files(spark, uri):
        return Pinned(uri, version)
    return Pinned(uri, version, frozenset(delta.partition_values(spark, uri, TABLE)))


def floors(
    spark: SparkSession,
    *,
    pinned: Pinned,
    table: str,
    legacy_uri: str,
    key: list[str],
    types: list[DataType],
) -> DataFrame | None:
    """Per deleted key of ``table`` (as ``TEXT_KEY``), its newest delete's order_key (``FLOOR``), from the lake's
    tombstone table as ``pinned`` and from ``legacy_uri``, the table's own tombstone table of an earlier
    release, where it exists; None if neither holds a key of the table (most tables of a batch).
    """
    parts: list[DataFrame] = []
    if pinned.version is not None and table in pinned.tables:
        shared = delta.read_at(spark, pinned.uri, pinned.version).where(F.col(TABLE) == table)
        parts.append(shared.select(F.col(KEY).alias(TEXT_KEY), F.col(ORDER_KEY).alias(FLOOR)))
    legacy_version = delta.current_version(spark, legacy_uri)
    if legacy_version is not None and delta.holds_files(spark, legacy_uri):
        # Typed key columns, possibly of a narrower type than the mirror's now: cast first, as the mirror reads.
        old = delta.read_at(spark, legacy_uri, legacy_version)
        typed = old.select(*[F.col(quote(k)).cast(t).alias(k) for k, t in zip(key, types, strict=True)], ORDER_KEY)
        parts.append(typed.select(key_text(key, types).alias(TEXT_KEY), F.col(ORDER_KEY).alias(FLOOR)))
    if not parts:
        return None
    return reduce(DataFrame.unionByName, parts).groupBy(TEXT_KEY).agg(F.max(FLOOR).alias(FLOOR))


def with_floors(folded: DataFrame, floor: DataFrame | None, *, key_cols: list[str], types: list[DataType]) -> DataFrame:
    """A keyed table's folded rows (key values in ``key_cols``) with each key's tombstone floor (``FLOOR``;
    NULL for every key when ``floor`` is None: no join to plan and run)."""
    if floor is None:
        return folded.withColumn(FLOOR, F.lit(None).cast(StringType()))
    keyed = folded.withColumn(TEXT_KEY, key_text(key_cols, types))
    return keyed.join(floor, on=TEXT_KEY, how="left").drop(TEXT_KEY)


def record(spark: SparkSession, uri: str, rows: list[DataFrame], *, app_id: str, batch_id: int) -> None:
    """Append the batch's deleted keys of all its tables (``fold.deleted_keys``), one commit; none if none.
    Each row records when it was appended (``DELETED_AT``: its retention counts from then).

    The table is created by the lake's first delete, in that append's commit, partitioned by source table.
    """
    if not rows:
        return
    if delta.exists(spark, uri) and DELETED_AT not in delta.schema(spark, uri).fieldNames():
        delta.add_columns(spark, uri, [(DELETED_AT, TimestampType())])  # a table of an earlier release
    stamped = reduce(DataFrame.unionByName, rows).withColumn(DELETED_AT, F.current_timestamp())
    delta.append(stamped, uri, app_id, batch_id, partition_by=[TABLE])


def truncate(spark: SparkSession, uri: str, truncated_at: dict[str, str], *, app_id: str, batch_id: int) -> None:
    """Delete the tombstones older than each table's TRUNCATE (``truncated_at``: table -> its sequence), one
    commit for all the batch's TRUNCATEs, under (``app_id``, ``batch_id``)."""
    if not truncated_at or not delta.exists(spark, uri):
        return
    older = reduce(
        lambda a, b: a | b,
        [(F.col(TABLE) == table) & (F.col(ORDER_KEY) < F.lit(at)) for table, at in sorted(truncated_at.items())],
    )
    with delta.idempotent_dml(spark, app_id, batch_id):
        DeltaTable.forPath(spark, uri).delete(older)


def truncate_legacy(spark: SparkSession, legacy_uri: str, truncated_at: str, *, app_id: str, batch_id: int) -> None:
    """Delete the tombstones older than a TRUNCATE from a table's own tombstone table of an earlier release."""
    if delta.exists(spark, legacy_uri):
        with delta.idempotent_dml(spark, app_id, batch_id):
            DeltaTable.forPath(spark, legacy_uri).delete(F.col(ORDER_KEY) < F.lit(truncated_at))


_pruned_at: dict[str, float] = {}
"""When this process last dropped the expired tombstones of each tombstone table (``compact``)."""
PRUNE_EVERY_S: Final = 3600.0
"""The longest time between two prunings of a tombstone table (shorter retentions prune every tenth of it)."""


def compact(
    spark: SparkSession, uri: str, *, max_files: int, retention_s: float, app_id: str, batch_id: int
) -> int | None:
    """Rewrite the tombstone table as one row per deleted key (its newest delete) and one file per source table,
    in one commit under (``app_id``, ``batch_id``), when it holds more than ``max_files`` files beyond one per
    source table, or when it holds expired rows (``retention_s`` > 0: recorded longer ago than that; looked
    for at the first batch of this process, then every tenth of the retention, at most an hour apart), which
    the rewrite drops. Returns the rows dropped as expired (None: no rewrite).

    A row of an earlier release, which has no ``DELETED_AT``, counts from the first rewrite that keeps it.
    """
    if not delta.exists(spark, uri) or delta.transactions(spark, uri).get(app_id, -1) >= batch_id:
        return None  # nothing yet; or a replayed batch whose rewrite committed before the crash
    now = time.time()
    cutoff = F.timestamp_micros(F.lit(int((now - retention_s) * 1_000_000)))
    expiring = False
    if retention_s > 0 and now - _pruned_at.get(uri, 0.0) >= min(retention_s / 10, PRUNE_EVERY_S):
        version = delta.current_version(spark, uri)
        assert version is not None
        if DELETED_AT in delta.schema(spark, uri).fieldNames():
            # A small job: the files' statistics of DELETED_AT skip all but those holding expired rows.
            expiring = not delta.read_at(spark, uri, version).where(F.col(DELETED_AT) < cutoff).isEmpty()
        _pruned_at[uri] = now
    if not expiring:
        files = delta.file_count(spark, uri)
        if files <= max_files:  # no Spark job for most batches
            return None
        if files - len(delta.partition_values(spark, uri, TABLE)) <= max_files:
            return None  # as compact as it gets, or nearly: a rewrite would not be worth it
    version = delta.current_version(spark, uri)
    assert version is not None
    stored = delta.read_at(spark, uri, version)
    has_time = DELETED_AT in stored.columns
    stamped = F.coalesce(DELETED_AT, F.current_timestamp()) if has_time else F.current_timestamp()
    newest = stored.groupBy(TABLE, KEY).agg(F.max(ORDER_KEY).alias(ORDER_KEY), F.max(stamped).alias(DELETED_AT))
    counted = Observation(f"binlake-tombstones-{uuid.uuid4().hex}")
    newest = newest.observe(counted, F.count_if(F.col(DELETED_AT) < cutoff).alias("expired"))
    if retention_s > 0:
        newest = newest.where(F.col(DELETED_AT) >= cutoff)
    (
        newest.repartition(TABLE)  # each source table's rows in one task, so one file
        .write.format("delta")
        .mode("overwrite")
        .option("txnAppId", app_id)
        .option("txnVersion", str(batch_id))
        .option("overwriteSchema", str(not has_time).lower())  # adds DELETED_AT to a table of an earlier release
        .partitionBy(TABLE)
        .save(uri)
    )
    return int(counted.get["expired"]) if retention_s > 0 else 0
