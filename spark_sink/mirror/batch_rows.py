"""A mirror batch's changelog rows as a read Spark can prune, not the micro-batch's own frame.

Structured Streaming hands ``foreachBatch`` its micro-batch as an already planned RDD: every read of it
scans every column of every row, and a filter on the table cannot skip the other tables' files. A mirror
batch reads its rows a dozen times (statistics, control events, descriptors, each table's fold), so each
table's fold scanned the whole batch. When the batch covers whole changelog versions, the same rows are the
changelog's change data feed between those versions (inserts only: the changelog is append-only), a Delta
read whose partition filters (``source_table``) and column pruning apply.

Which versions a batch covers is in the mirror query's offset log (``offset_log``): the Delta source's end
offset of the batch before it and of this batch, each a changelog version and a file index in it; index
-1 is a version's start, so a batch between two such offsets holds every file of the versions between.
The query's first batch reads a snapshot of the changelog (it starts at its beginning): a version of the
changelog read as a table. Anything else (a batch ending inside a version under ``maxFilesPerTrigger``, a
changelog without a change feed for those versions) keeps the frame.

A change-feed read is checked against the row count the changelog's log gives for its versions (the
``numRecords`` statistic of each file they added; counting the frame would scan all of it): the caller
compares it with the rows its statistics count, and on any difference reads the frame instead
(``mismatch``), with a warning. A snapshot read needs no check: the first batch of whole versions is that
snapshot's files, as the Delta source lists them.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from binlake.spark_sink import delta
from binlake.spark_sink.changelog.table import change_feed_from, inserted_between
from binlake.spark_sink.checkpoint import offset_log
from binlake.spark_sink.hadoop_files import HadoopFiles
from binlake.spark_sink.settings import SinkSettings

log = logging.getLogger(__name__)

VERSION_START = -1
"""The Delta source's file index of an offset at the start of a version (no file of it read yet)."""


def whole_versions(start: Any, end: Any) -> tuple[int, int] | None:
    """The first and last changelog version a batch between these two Delta source offsets reads in full, or
    None when it does not read whole versions only (or the offsets do not say)."""
    if not all(isinstance(offset, dict) for offset in (start, end)):
        return None
    for offset in (start, end):
        if offset.get("index") != VERSION_START or offset.get("isStartingVersion", True):
            return None
        if not isinstance(offset.get("reservoirVersion"), int):
            return None
    if start.get("reservoirId") != end.get("reservoirId"):
        return None
    first, last = int(start["reservoirVersion"]), int(end["reservoirVersion"]) - 1
    return (first, last) if first <= last else None


def snapshot_version(end: Any) -> int | None:
    """The changelog version whose snapshot a query's first batch read in full, ending at Delta source offset
    ``end`` (the start of the next version), or None."""
    if not isinstance(end, dict) or end.get("index") != VERSION_START or end.get("isStartingVersion", True):
        return None
    version = end.get("reservoirVersion")
    return version - 1 if isinstance(version, int) and version > 0 else None


@dataclass(frozen=True, slots=True)
class BatchRead:
    """How a mirror batch reads its changelog rows."""

    rows: DataFrame
    frame: DataFrame
    """The micro-batch's own frame (``rows`` itself when the batch reads it)."""
    expected: int | None = None
    """The rows the changelog's log says ``rows`` holds (None: nothing to check)."""
    what: str = "the micro-batch"
    versions: tuple[int, int] | None = None
    """The first and last changelog version ``rows`` holds in full, when it is their change data feed."""


def batch_rows(settings: SinkSettings, frame: DataFrame, batch_id: int) -> BatchRead:
    """The mirror batch ``batch_id``'s changelog rows (``frame``) as a prunable read where the offsets allow
    it; else ``frame``.

    The query's first batch (it reads the changelog from its start: the snapshot of a version) is that
    version of the changelog; a later one, the change feed of the whole versions it covers.
    """
    spark = frame.sparkSession
    files = HadoopFiles(spark)
    checkpoint = settings.mirror_checkpoint()
    uri = settings.changelog_uri()
    end = offset_log.source_offset(files.read(f"{checkpoint}/offsets/{batch_id}"))
    if batch_id == 0:
        version = snapshot_version(end)
        if version is None:
            return BatchRead(frame, frame)
        read = spark.read.format("delta").option("versionAsOf", str(version)).load(uri)
        return BatchRead(read.select(*frame.columns), frame, None, f"version {version}")
    versions = whole_versions(offset_log.source_offset(files.read(f"{checkpoint}/offsets/{batch_id - 1}")), end)
    found = delta.state(spark, uri)
    feed_from = None if found is None else change_feed_from(found.properties)
    if versions is None or feed_from is None or versions[0] < feed_from:
        return BatchRead(frame, frame)
    expected = records(spark, uri, versions[0], versions[1])
    if expected is None:
        return BatchRead(frame, frame)
    read = inserted_between(spark, uri, versions[0], versions[1]).select(*frame.columns)
    what = f"the change feed of versions {versions[0]}-{versions[1]}"
    return BatchRead(read, frame, expected, what, versions)


def records(spark: SparkSession, uri: str, first: int, last: int) -> int | None:
    """The rows the changelog's versions ``first`` to ``last`` added (the files' ``numRecords``; the Delta
    source and the change feed skip files added without a data change, as a compaction adds them), or None
    when a file has no such statistic."""
    total = 0
    for version in range(first, last + 1):
        for action in delta.commit_actions(spark, uri, version):
            add = action.get("add")
            if add is None or not add.get("dataChange", True):
                continue
            count = json.loads(add.get("stats") or "{}").get("numRecords")
            if not isinstance(count, int):
                return None
            total += count
    return total


def mismatch(read: BatchRead, batch_id: int, counted: int) -> BatchRead:
    """The batch's own frame, after its prunable read held ``counted`` rows where the log says otherwise."""
    log.warning(
        "mirror batch %d: the changelog's %s holds %d rows, its log says %s: reading the batch as Spark gave it",
        batch_id,
        read.what,
        counted,
        read.expected,
    )
    return BatchRead(read.frame, read.frame)
