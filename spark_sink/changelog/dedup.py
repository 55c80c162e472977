"""Which of a batch's Kafka records the changelog holds already: a replay's, found at the cost of the batch.

A micro-batch writes only the records neither the changelog nor the quarantine holds yet (by Kafka
topic, partition and offset, read at the table version pinned when the batch started), so replaying a
topic range under a new checkpoint adds nothing. That read is skipped where the query has proven the
changelog holds nothing yet (``Frontier``).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from binlake.spark_sink.checkpoint.offset_log import OffsetRange
from binlake.spark_sink.layout import COORDINATES


def offset_ranges(raw: DataFrame) -> list[OffsetRange]:
    """The first and last offset of each topic partition in a batch of Kafka records: one small job over the
    records' coordinates (nothing decoded)."""
    found = raw.groupBy("topic", "partition").agg(F.min("offset"), F.max("offset")).collect()
    return [OffsetRange(row[0], int(row[1]), int(row[2]), int(row[3])) for row in found]


def in_ranges(ranges: list[OffsetRange], *, to_end: bool = False) -> Column:
    """Rows inside any of ``ranges`` (``to_end``: at or after a range's first offset, whatever its last):
    Delta skips the files whose offset statistics lie outside them."""
    condition = F.lit(False)
    for r in ranges:
        offset = F.col("_kafka_offset")
        within = offset >= r.first if to_end or r.last is None else offset.between(r.first, r.last)
        condition = condition | (
            (F.col("_kafka_topic") == r.topic) & (F.col("_kafka_partition") == r.partition) & within
        )
    return condition


def written_in(written: DataFrame, ranges: list[OffsetRange]) -> DataFrame:
    """The Kafka coordinates ``written`` holds within ``ranges`` (a replayed batch's records, usually none).

    Delta's per-file offset statistics leave only the files a replay of this range would have written,
    so the check costs O(batch), not O(changelog).
    """
    return written.where(in_ranges(ranges)).select(*COORDINATES)


class Frontier:
    """Per Kafka topic partition, an offset from which the changelog is known to hold no record but the
    ones this query appended: a batch reading only from there on needs no "already written?" read.

    A query starts knowing nothing (a new checkpoint may replay a range the changelog holds), so its
    first batch of each partition asks the changelog whether it holds anything at or after the batch's
    first offset (``held_from``). If nothing, the query itself is the only writer of every later offset
    of that partition, and a batch replayed after a failure has the same id and offsets, so Delta's
    transaction id already skips what it committed: the partition is proven from that offset on.
    """

    def __init__(self) -> None:
        self._clean_from: dict[tuple[str, int], int] = {}

    def unproven(self, ranges: list[OffsetRange]) -> list[OffsetRange]:
        """The ranges that might hold records the changelog already has."""
        return [r for r in ranges if self._clean_from.get((r.topic, r.partition), r.first + 1) > r.first]

    def prove(self, topic: str, partition: int, first: int) -> None:
        """The changelog holds no record of ``topic``/``partition`` at or after ``first``."""
        known = self._clean_from.get((topic, partition))
        self._clean_from[(topic, partition)] = first if known is None else min(known, first)


def held_from(written: DataFrame, ranges: list[OffsetRange]) -> dict[tuple[str, int], int]:
    """Per topic partition of ``ranges``, the smallest offset ``written`` holds at or after the range's
    first offset (partitions holding none are absent). Delta's per-file offset statistics skip the files
    that end before it, so on a live lake this reads next to nothing."""
    held = written.where(in_ranges(ranges, to_end=True)).groupBy("_kafka_topic", "_kafka_partition")
    found = held.agg(F.min("_kafka_offset")).collect()
    return {(row[0], int(row[1])): int(row[2]) for row in found}


def overlaps(held: dict[tuple[str, int], int], ranges: list[OffsetRange]) -> bool:
    """Whether a partition's first held offset (``held_from``) lies within its range: the batch holds records
    the changelog has (an open range: any held offset does)."""
    for r in ranges:
        at = held.get((r.topic, r.partition))
        if at is not None and (r.last is None or at <= r.last):
            return True
    return False


def not_yet_written(rows: DataFrame, seen: DataFrame | None) -> DataFrame:
    """``rows`` whose Kafka coordinates are not in ``seen`` (``written_in``; None: nothing written)."""
    if seen is None:
        return rows
    return rows.join(F.broadcast(seen), on=COORDINATES, how="left_anti")
