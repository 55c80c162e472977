"""The batch's keys as a condition on the mirror alone, added to its MERGE: the cost follows the changes.

Delta's MERGE joins the folded batch with every row of every file that holds one of its keys. With deletion
vectors it writes only the changed rows, but it still reads those files' rows and shuffles them into the
join; with changes spread over the keys, that is the whole table, so a batch cost what the table holds. A
condition on the target alone, ``t.k IN (the batch's keys)``, is pushed by Spark into the MERGE's scans of the
mirror: the join then gets only the rows whose key the batch has. The condition is implied by the key
equality the MERGE already asks, so the MERGE's result does not change.

The keys go into the plan as literals, which Spark parses and plans at about 25-60 µs each (measured: 20,000
keys, 0.5-1.4 s), so the condition is left out where it cannot pay: a batch with more distinct keys than
``limit`` (a bulk load, which touches most rows anyway), a mirror of less than ``BYTES_PER_KEY`` per key (it
holds few more rows than the batch has keys), and a key column of a type whose literal may not compare as the
column does (floating point: -0.0 and NaN; a timestamp with a time zone: its text depends on the session's zone).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import DataFrame
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    TimestampNTZType,
)

from binlake.spark_sink.delta import quote
from binlake.spark_sink.mirror.typemap import sql_string

BYTES_PER_KEY: Final = 1024
"""Mirror bytes per batch key below which the MERGE gets no key condition: at the bench's 55 bytes a row, a
mirror of fewer than about 20 rows per key (5,000 keys: 20,000 rows, 1.5 MiB, MERGE 4.3 s either way)."""
_EXACT = (BooleanType, ByteType, ShortType, IntegerType, LongType, DecimalType, DateType, TimestampNTZType)
"""Types whose text (``CAST(v AS STRING)``) casts back to the same value."""


def _exact(data_type: DataType) -> bool:
    if isinstance(data_type, StringType):
        return data_type.simpleString() == "string"  # a collated string compares by its collation
    return isinstance(data_type, (*_EXACT, BinaryType))


def key_condition(
    source: DataFrame, keys: list[tuple[int, str, DataType]], *, limit: int, mirror_bytes: int | None = None
) -> str | None:
    """``t.<key> IN (...)`` for each key column (``(i, name, type)``: the fold's ``_v<i>`` of the mirror's column
    ``name``), the values the folded ``source`` holds; None when it has none or more than ``limit`` distinct
    keys, the mirror (``mirror_bytes``, None: unknown) is under ``BYTES_PER_KEY`` per key, or a key column's type
    is not exact (module doc)."""
    if mirror_bytes is not None:
        limit = min(limit, mirror_bytes // BYTES_PER_KEY)
    if limit <= 0 or not keys or not all(_exact(data_type) for _, _, data_type in keys):
        return None
    texts = [
        f"hex(_v{i})" if isinstance(data_type, BinaryType) else f"CAST(_v{i} AS STRING)" for i, _, data_type in keys
    ]
    rows = source.selectExpr(*texts).distinct().limit(limit + 1).collect()
    if not rows or len(rows) > limit:
        return None
    parts: list[str] = []
    for j, (_, name, data_type) in enumerate(keys):
        values = sorted({row[j] for row in rows if row[j] is not None})
        if not values:
            return None
        parts.append(f"t.{quote(name)} IN ({', '.join(_literal(value, data_type) for value in values)})")
    return " AND ".join(parts)


def _literal(text: str, data_type: DataType) -> str:
    """The SQL literal of a key value from its text (``key_condition``'s ``texts``): bare where the parser reads
    it as the value (an integer, a boolean, a decimal with ``BD``), else a typed literal: short texts keep a
    batch's many keys cheap to parse (a CAST per key took twice as long)."""
    if isinstance(data_type, BinaryType):
        return f"X'{text}'"
    if isinstance(data_type, StringType):
        return sql_string(text)
    if isinstance(data_type, (BooleanType, ByteType, ShortType, IntegerType, LongType)):
        return text
    if isinstance(data_type, DecimalType):
        return f"{text}BD"  # the IN list's type is the column's and the literals', wide enough for each
    if isinstance(data_type, DateType):
        return f"DATE '{text}'"
    return f"TIMESTAMP_NTZ '{text}'"
