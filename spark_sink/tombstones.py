"""Tombstones: the deleted keys of a mirror, so an event older than a delete never brings the row back.

``tombstones/<table>/`` holds, per delete a batch applied, the key and the
``order_key`` of the delete. It is append-only (an append is much cheaper than
a MERGE): a key deleted twice has two rows, and a key inserted again after its
delete keeps its old row, which is harmless: while the mirror holds the key,
the mirror row's newer ``order_key`` is the key's floor, and the tombstone's
is used only for a key the mirror does not hold (``mirror._merge``). A stale
DELETE (older than the mirror row) is appended too, equally harmless. The
floors are read at the version pinned when the batch starts, so a batch
replayed after a crash between the mirror's commit and the tombstones' append
folds the same rows and appends the same deletes. Tombstones are kept until a
TRUNCATE newer than them; they cost one small row per delete.
"""

from __future__ import annotations

import json
from typing import Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StringType, StructField, StructType

from spark_sink import delta_tables, mirror_schema
from spark_sink.delta_tables import quote
from spark_sink.mirror_plan import ORDER_KEY, PROP_KEY

FLOOR: Final = "_floor"


def ensure(spark: SparkSession, uri: str, key: list[str], types: dict[str, DataType], table: str) -> None:
    """Create the tombstone table, or give its key columns the mirror's (possibly widened) types."""
    columns: dict[str, DataType] = {name: types[name] for name in key}
    columns[ORDER_KEY] = StringType()
    props = {PROP_KEY: json.dumps(key), mirror_schema.PROP_SOURCE: table, "delta.enableTypeWidening": "true"}
    mirror_schema.follow(spark, uri, columns, properties=props)


def floors(
    spark: SparkSession, *, tomb_uri: str, key: list[str], key_cols: list[str], types: list[DataType]
) -> DataFrame:
    """Per deleted key (as ``key_cols``), its newest delete's order_key (``FLOOR``), read at a pinned version."""
    version = delta_tables.current_version(spark, tomb_uri)
    if version is None or not delta_tables.holds_files(spark, tomb_uri):
        return spark.createDataFrame(
            [],
            StructType(
                [*(StructField(c, t) for c, t in zip(key_cols, types, strict=True)), StructField(FLOOR, StringType())]
            ),
        )
    # Pinned: the batch's own append must not move the floor under a recomputed plan.
    table = delta_tables.read_at(spark, tomb_uri, version)
    return (
        table.select(
            *[F.col(quote(k)).cast(t).alias(c) for k, c, t in zip(key, key_cols, types, strict=True)],
            F.col(ORDER_KEY).alias(FLOOR),
        )
        .groupBy(*key_cols)
        .agg(F.max(FLOOR).alias(FLOOR))
    )


def record(
    spark: SparkSession,
    uri: str,
    *,
    folded: DataFrame,
    key: list[str],
    key_cols: list[str],
    app_id: str,
    batch_id: int,
    deletes: int,
    types: dict[str, DataType],
) -> None:
    """Append the batch's ``deletes`` deleted keys (counted while folding) with their delete's order_key;
    no commit if none.

    The tombstone table is created by its first delete, in that append's own commit (one commit, not a
    creation and an append): a table that never deletes has none. Such a table carries no ``binlake.*``
    properties (a write cannot set them); its mirror, in the same folder, names its source table.
    """
    if not deletes:
        return
    # An existing table's key columns already follow the mirror's types: the batch's schema step saw to it.
    exists = delta_tables.exists(spark, uri)
    deleted = folded.where(F.col("_delete")).select(
        *[F.col(c).cast(types[k]).alias(k) for k, c in zip(key, key_cols, strict=True)], ORDER_KEY
    )
    options = {} if exists else {"delta.enableTypeWidening": "true"}
    delta_tables.append(deleted, uri, app_id, batch_id, options=options)
