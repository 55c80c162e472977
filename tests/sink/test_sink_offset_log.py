"""``offset_log.kafka_ranges``: which Kafka offsets a changelog micro-batch reads, from the query's offset log.

Spark writes each batch's end offsets before the batch runs; the batch reads from the previous entry's
offsets (exclusive ends) up to its own. Anything the two entries do not say for sure answers None, and
the batch then measures its offsets with a job.
"""

from __future__ import annotations

import json

import pytest

from binlake.spark_sink.checkpoint.offset_log import (
    OffsetRange,
    initial_kafka_offsets,
    kafka_offsets,
    kafka_ranges,
    source_offset,
)

pytestmark = pytest.mark.unit

META = '{"batchWatermarkMs":0,"batchTimestampMs":1764000000000,"conf":{"spark.sql.shuffle.partitions":"8"}}'


def entry(offset: object) -> str:
    return f"v1\n{META}\n{offset if isinstance(offset, str) else json.dumps(offset)}"


def ranges(before: str | None, now: str | None) -> list[OffsetRange] | None:
    return kafka_ranges(kafka_offsets(before), kafka_offsets(now))


def test_a_batch_reads_from_the_previous_end_to_its_own() -> None:
    before = entry({"unified": {"0": 120, "1": 5, "2": 7}})
    now = entry({"unified": {"0": 150, "1": 5, "2": 9}})
    assert ranges(before, now) == [
        OffsetRange("unified", 0, 120, 149),
        OffsetRange("unified", 2, 7, 8),  # partition 1 has no record in this batch
    ]


def test_a_partition_added_since_is_read_from_its_beginning() -> None:
    before = entry({"unified": {"0": 10}})
    now = entry({"unified": {"0": 10, "1": 4}})
    assert ranges(before, now) == [OffsetRange("unified", 1, 0, 3)]


def test_the_first_batch_starts_at_the_initial_offsets() -> None:
    initial = '\x00v1\n{"unified":{"0":40,"1":0}}'  # sources/0/0, as Spark's Kafka source writes it
    assert initial_kafka_offsets(initial) == {("unified", 0): 40, ("unified", 1): 0}
    now = entry({"unified": {"0": 50, "1": 2}})
    assert kafka_ranges(initial_kafka_offsets(initial), kafka_offsets(now)) == [
        OffsetRange("unified", 0, 40, 49),
        OffsetRange("unified", 1, 0, 1),
    ]
    for broken in (None, "v1\n", '\x00v2\n{"unified":{"0":1}}', "\x00v1\nnot json"):
        assert initial_kafka_offsets(broken) is None


@pytest.mark.parametrize(
    ("before", "now"),
    [
        (None, entry({"unified": {"0": 5}})),  # the query's first batch: nothing before it
        (entry({"unified": {"0": 5}}), None),
        (entry({"unified": {"0": 9}}), entry({"unified": {"0": 5}})),  # offsets went back
        (entry({"unified": {"0": -2}}), entry({"unified": {"0": 5}})),  # symbolic: earliest
        (entry("not json"), entry({"unified": {"0": 5}})),
        (entry({}), entry({"unified": {"0": 5}})),
        (entry({"unified": 12}), entry({"unified": {"0": 5}})),
        ("v2\n{}\n{}", entry({"unified": {"0": 5}})),
        (f"v1\n{META}\n{{}}\n{{}}", entry({"unified": {"0": 5}})),  # two sources
    ],
)
def test_anything_else_is_not_known(before: str | None, now: str | None) -> None:
    assert ranges(before, now) is None


def test_source_offset_is_the_third_line() -> None:
    assert source_offset(entry({"a": 1})) == {"a": 1}
    assert source_offset(None) is None
    assert source_offset("v1\n{}") is None
