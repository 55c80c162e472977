"""The changelog query's ``Frontier``: which batches must ask the changelog "already written?".

Real Spark for ``held_from`` (a DataFrame with the changelog's Kafka columns);
the ``Frontier`` bookkeeping is pure. A batch may skip the read only for a
partition proven empty from an offset at or before its first one; a partition
the changelog holds records of at or after the batch's first offset stays
unproven (a replay under a new checkpoint keeps asking until it passes them).
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession

from binlake.spark_sink.changelog.dedup import Frontier, held_from
from binlake.spark_sink.checkpoint.offset_log import OffsetRange
from tests.support.spark_fixtures import spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the session fixture, imported so pytest finds it


def test_held_from_finds_the_first_record_at_or_after_each_range(spark: SparkSession) -> None:
    rows = [("t", 0, offset) for offset in range(10, 20)] + [("t", 1, 5), ("u", 0, 100)]
    written = spark.createDataFrame(rows, "_kafka_topic string, _kafka_partition int, _kafka_offset bigint")
    ranges = [
        OffsetRange("t", 0, 0, 5),  # before the held records: held from 10 (beyond the range)
        OffsetRange("t", 1, 6, 9),  # after partition 1's only record: nothing held
        OffsetRange("u", 0, 100, 120),  # the range's first offset is held
        OffsetRange("v", 0, 0, 9),  # a topic the changelog never saw
    ]
    assert held_from(written, ranges) == {("t", 0): 10, ("u", 0): 100}


def test_frontier_skips_only_ranges_from_a_proven_offset_on() -> None:
    frontier = Frontier()
    first = [OffsetRange("t", 0, 100, 199), OffsetRange("t", 1, 0, 9)]
    assert frontier.unproven(first) == first  # a new query knows nothing
    frontier.prove("t", 0, 100)
    assert frontier.unproven([OffsetRange("t", 0, 200, 299), OffsetRange("t", 1, 10, 19)]) == [
        OffsetRange("t", 1, 10, 19)
    ]
    # The same batch again (a retry with the same offsets) and anything later: proven.
    assert frontier.unproven([OffsetRange("t", 0, 100, 199)]) == []
    # A range starting before the proven offset (not something one query reads, but never assumed clean).
    assert frontier.unproven([OffsetRange("t", 0, 99, 150)]) == [OffsetRange("t", 0, 99, 150)]
    frontier.prove("t", 0, 150)  # a later proof never moves the frontier forward
    assert frontier.unproven([OffsetRange("t", 0, 120, 130)]) == []
