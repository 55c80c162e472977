"""``changelog.batch.process``: one pass appends a batch; replays add nothing; the quarantine survives a crash.

Real Spark and Delta, no broker: Kafka-shaped rows (canonical events of
several tables with event times seconds to days old, and unreadable messages)
handed to ``changelog.batch.process`` as the changelog query would. Its statistics (read
back from what it appended) must equal ``batch_stats.collect`` over the batch's
changelog rows, the unreadable records must be quarantined, and a batch run
again under a new checkpoint (another app id), or retried after a crash
between its changelog and quarantine commits, must add nothing twice.
"""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from binlake.shared.codec import avro
from binlake.spark_sink import delta
from binlake.spark_sink.changelog import batch, dedup, table
from binlake.spark_sink.checkpoint import offset_log
from binlake.spark_sink.events.rows import changelog_rows
from binlake.spark_sink.events.source import KAFKA_SCHEMA, decode
from binlake.spark_sink.observe import batch_stats
from tests.bench import sink_bench
from tests.support.spark_fixtures import sink_settings_for_tests, spark

pytestmark = pytest.mark.integration
__all__ = ["spark"]  # the session fixture, imported so pytest finds it

AGES_MS = [50, 1_500, 30_000, 600_000, 7_200_000, 3 * 86_400_000]
GARBAGE = [b'{"not": "avro"}', avro.MAGIC + avro.fingerprint() + b"\xff\xff\xff", b"\xc3"]
STAMP = dt.datetime(2026, 11, 23, tzinfo=dt.UTC)
Row = tuple[bytes | None, bytes, str, int, int, dt.datetime, int]


def _records(count: int, *, seed: int, first_offset: int = 0) -> list[Row]:
    """``count`` events of 4 tables on partitions 0-3 (offsets from ``first_offset``) and the garbage on 1."""
    now_ms = int(time.time() * 1000)
    items = sink_bench.generate(count, seed=seed, tables=4)
    rows: list[Row] = [
        (item.key, item.with_ts(now_ms - AGES_MS[i % len(AGES_MS)]), "t", item.partition, first_offset + i, STAMP, 0)
        for i, item in enumerate(items)
    ]
    return rows + [(None, value, "t", 1, first_offset + count + i, STAMP, 0) for i, value in enumerate(GARBAGE)]


def _counts(stats: batch_stats.BatchStats) -> dict[tuple[str, str], int]:
    return {key: entry.rows for key, entry in stats.by_table_op.items()}


def test_one_pass_appends_counts_and_quarantines_exactly_once(
    spark: SparkSession, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = sink_settings_for_tests(lake_uri=tmp_path.as_uri())
    table.ensure_table(spark, settings.changelog_uri(), list(settings.changelog_partition_by))
    first = _records(240, seed=3)
    raw: DataFrame = spark.createDataFrame(first, KAFKA_SCHEMA)
    expected = batch_stats.collect(changelog_rows(decode(raw, envelope=True)))

    report = batch.process(settings, "app", raw, 0, frontier=dedup.Frontier())

    assert _counts(report.stats) == _counts(expected)
    assert report.changelog_rows == 240 and len(report.stats.by_table_op) > 4
    assert sum(b.count for b in report.stats.event_time) == 240
    assert {b.width_ms for b in report.stats.event_time} == {b.width_ms for b in expected.event_time}
    assert report.quarantined == len(GARBAGE) and report.records == 240 + len(GARBAGE)
    assert {"offset_ranges", "not_yet_written", "changelog_append", "batch_stats"} <= set(report.steps.seconds)
    quarantine = spark.read.format("delta").load(settings.quarantine_uri())
    assert sorted(r["_kafka_offset"] for r in quarantine.collect()) == [240, 241, 242]

    def lake() -> tuple[int, int]:
        return (
            spark.read.format("delta").load(settings.changelog_uri()).count(),
            spark.read.format("delta").load(settings.quarantine_uri()).count(),
        )

    # The same records under a new checkpoint (another app id): nothing is written twice.
    other = batch.process(settings, "other-app", raw, 0, frontier=dedup.Frontier())
    assert (other.changelog_rows, other.quarantined) == (0, 0)
    assert lake() == (240, 3)

    # The next batch starts where the first ended (its offsets as the query's offset log gives them), and is
    # killed after its changelog commit, before its quarantine commit: run again (a retry: the same app id
    # and batch id), it appends the quarantine only. The changelog append is skipped, and its rows, counted
    # by no report before the crash, are not counted now either: a retry reports only what it appends.
    records = _records(60, seed=4, first_offset=243)
    second = spark.createDataFrame(records, KAFKA_SCHEMA)
    ends: dict[int, int] = {}
    for record in records:
        ends[record[3]] = max(ends.get(record[3], 0), record[4])
    ranges = [offset_log.OffsetRange("t", partition, 243, last) for partition, last in sorted(ends.items())]
    append = delta.append

    def crash_at_quarantine(frame: DataFrame, uri: str, *args: Any, **kwargs: Any) -> None:
        if uri == settings.quarantine_uri():
            raise RuntimeError("killed before the quarantine commit")
        append(frame, uri, *args, **kwargs)

    monkeypatch.setattr(delta, "append", crash_at_quarantine)
    with pytest.raises(RuntimeError, match="killed"):
        batch.process(settings, "app", second, 1, ranges=ranges)
    monkeypatch.setattr(delta, "append", append)
    assert lake() == (300, 3)
    retried = batch.process(settings, "app", second, 1, ranges=ranges)
    assert (retried.changelog_rows, retried.quarantined, retried.records) == (0, len(GARBAGE), 60 + len(GARBAGE))
    assert lake() == (300, 6)


def test_offset_ranges_and_overlaps(spark: SparkSession) -> None:
    raw = spark.createDataFrame(_records(40, seed=6, first_offset=1000), KAFKA_SCHEMA)
    ranges = {(r.topic, r.partition): (r.first, r.last) for r in dedup.offset_ranges(raw)}
    rows = raw.collect()
    for (topic, partition), (first, last) in ranges.items():
        mine = [r["offset"] for r in rows if (r["topic"], r["partition"]) == (topic, partition)]
        assert (first, last) == (min(mine), max(mine))
    bounded = [offset_log.OffsetRange("t", 0, 10, 20)]
    assert not dedup.overlaps({("t", 0): 21}, bounded)
    assert dedup.overlaps({("t", 0): 20}, bounded)
    assert dedup.overlaps({("t", 0): 0}, [offset_log.OffsetRange("t", 0, 0)])  # open range, offset 0
    assert not dedup.overlaps({("t", 1): 5}, [offset_log.OffsetRange("t", 0, 0)])


@pytest.mark.parametrize("partition_by", [["source_table", "event_date"], ["event_date"]])
def test_local_statistics_equal_a_spark_jobs(spark: SparkSession, tmp_path: Path, partition_by: list[str]) -> None:
    """The statistics DuckDB reads from a local commit's files are those a Spark job computes from them,
    whether the source table is a partition column (a file's partition value) or a column of the files."""
    settings = sink_settings_for_tests(lake_uri=tmp_path.as_uri(), changelog_partition_by=partition_by)
    uri = settings.changelog_uri()
    table.ensure_table(spark, uri, partition_by)
    raw = spark.createDataFrame(_records(200, seed=8), KAFKA_SCHEMA)
    delta.append(changelog_rows(decode(raw, envelope=True)), uri, "app", 0, partition_by=partition_by)
    commit = table.batch_commit(spark, uri, after=0, app_id="app", batch_id=0)
    assert commit is not None
    files = table._local_files(Path(tmp_path / "changelog"), commit)
    assert files is not None and all((source is None) == ("source_table" not in partition_by) for _, source in files)
    now_ms = int(time.time() * 1000)
    local = batch_stats.collect_local(files, now_ms=now_ms)
    assert local is not None and local.rows == 200
    assert local == batch_stats.collect(table.appended(spark, uri, commit, []), now_ms=now_ms)
