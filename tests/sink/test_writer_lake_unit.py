"""Reading the transactions the changelog writer without Spark left in a lake (``checkpoint.writer_lake``)."""

from __future__ import annotations

import json

from binlake.spark_sink.checkpoint.writer_lake import EARLIEST, WriterStart, writer_partition


def test_a_writer_transaction_names_its_topic_and_partition() -> None:
    assert writer_partition("binlake-writer/binlake.events/3", "binlake.events") == (3, False)
    assert writer_partition("binlake-writer/binlake.events/3/quarantine", "binlake.events") == (3, True)
    assert writer_partition("my/app/binlake.events/0", "binlake.events") == (0, False)  # an app id with "/"
    assert writer_partition("binlake-writer/other.topic/3", "binlake.events") is None
    assert writer_partition("binlake-0123456789abcdef", "binlake.events") is None  # a Spark query's
    assert writer_partition("binlake-writer/binlake.events/x", "binlake.events") is None


def test_every_partition_gets_a_starting_offset() -> None:
    start = WriterStart({0: 73, 2: 5}, ["binlake-writer/t/0", "binlake-writer/t/2"])
    assert json.loads(start.starting_offsets("t", [0, 1, 2])) == {"t": {"0": 73, "1": EARLIEST, "2": 5}}
