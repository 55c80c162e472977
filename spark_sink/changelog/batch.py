"""One micro-batch of the changelog query, exactly once: decode, [mirrors,] changelog, quarantine.

One pass: the batch's records are read from Kafka, decoded (the envelope only,
unless the changelog query applies the mirrors itself) and appended to the
changelog in one Spark job, which also counts the records that are not
readable events (a Spark ``Observation``); only a batch that has some reads
them again, for the quarantine. Its statistics (rows per table and op, event
times: the metrics) are then read from what it appended: a few columns of
the new files, not a second decode.

Which records a batch may append: those neither table holds yet (by Kafka
topic, partition and offset, at the table version pinned when the batch
started). The query proves per Kafka partition, once per run, that the
changelog holds nothing from the batch's first offset on (``Frontier``), and
later batches start where the one before ended (the query's offset log says
where, ``offset_log``), so they need no "already written?" read. With
``mirrors=inline`` the batch MERGEs the mirrors first (from a cached decode
of every field; with ``mirrors=follow`` the mirror query does that from the
changelog, ``mirror.batch``). Every commit is under (app id,
batch id).

Crash safety: after a crash anywhere, Spark replays the same batch id with
the same offsets. Delta skips the changelog append when the changelog holds
the batch's commit already (its txn check; the batch then finds no commit of
its own in the log after its pinned version, and reads its records again for
the quarantine, since a skipped write reports no observation); the
quarantine append comes after it and is skipped the same way once done. A
replay of a topic range under a new checkpoint (new app id) finds every
record already in the changelog and changes nothing.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Observation

from binlake.spark_sink import delta
from binlake.spark_sink.changelog import dedup, table
from binlake.spark_sink.checkpoint import offset_log
from binlake.spark_sink.events.rows import BAD, RECORDS, changelog_rows
from binlake.spark_sink.events.source import decode
from binlake.spark_sink.layout import CHANGELOG_VERSION
from binlake.spark_sink.mirror.apply import apply, older_than_retention
from binlake.spark_sink.observe import batch_stats
from binlake.spark_sink.observe.batch_stats import BatchStats
from binlake.spark_sink.observe.steps import StepClock
from binlake.spark_sink.settings import SinkSettings


@dataclass(slots=True)
class BatchReport:
    batch_id: int
    records: int = 0
    """Kafka records in the batch, readable or not (metric ``binlake_sink_input_rows_total``)."""
    changelog_rows: int = 0
    quarantined: int = 0
    tables: list[str] = field(default_factory=list)
    stats: BatchStats = field(default_factory=BatchStats)
    """Rows per (table, op) and event times of the rows appended to the changelog (metrics, benchmark)."""
    steps: StepClock = field(default_factory=StepClock)
    """Wall time per step of ``process`` (metrics, benchmark)."""
    older_than_retention: int = 0
    """``mirrors=inline``: events older than the tombstone retention (``apply.older_than_retention``)."""
    tombstones_expired: int = 0
    """``mirrors=inline``: tombstones the batch dropped as older than the retention."""
    visible_at_s: float | None = None
    """Wall time (epoch s) when the batch's changelog commit was visible (set after the append; else by the
    job when ``process`` returns)."""


def process(
    settings: SinkSettings,
    app_id: str,
    raw: DataFrame,
    batch_id: int,
    *,
    version: int = CHANGELOG_VERSION,
    frontier: dedup.Frontier | None = None,
    ranges: list[offset_log.OffsetRange] | None = None,
) -> BatchReport:
    """One micro-batch into a changelog of layout ``version`` (``events.rows``: 2, or 1 for an earlier lake).

    ``frontier``: the query's knowledge of where the changelog holds nothing yet (one per query run;
    None: every batch asks the changelog). ``ranges``: the batch's offsets per topic partition, when the
    query knows them (from its offset log, ``offset_log.kafka_ranges``); None: one small job finds them.
    """
    spark = raw.sparkSession
    report = BatchReport(batch_id)
    inline = settings.mirrors == "inline"
    # The records are read from Kafka once, by the append; only a rare batch reads them again (one with
    # unreadable records, for the quarantine; a replay): caching them all would cost every batch more.
    # A version-2 changelog alone needs only the envelope (much cheaper); the mirrors need the images.
    decoded = decode(raw, envelope=version != 1 and not inline)
    pinned: list[DataFrame] = []
    checkpointed: list[DataFrame] = []
    step = report.steps.step
    try:
        changelog_uri, quarantine_uri = settings.changelog_uri(), settings.quarantine_uri()
        with step("pin_versions"):
            changelog_version = delta.current_version(spark, changelog_uri)
            quarantine_version = delta.current_version(spark, quarantine_uri)
        with step("offset_ranges"):
            if ranges is None:
                ranges = dedup.offset_ranges(raw)
        with step("not_yet_written"):
            seen = None
            unproven = ranges if frontier is None else frontier.unproven(ranges)
            held: dict[tuple[str, int], int] = {}
            # An empty changelog (a new lake) holds nothing: its checksum says so without a job.
            if changelog_version is not None and unproven and delta.holds_files(spark, changelog_uri):
                written = delta.read_at(spark, changelog_uri, changelog_version)
                held = dedup.held_from(written, unproven)
                if dedup.overlaps(held, unproven):
                    seen = dedup.written_in(written, ranges)
            if frontier is not None:
                for r in unproven:
                    if (r.topic, r.partition) not in held:
                        frontier.prove(r.topic, r.partition, r.first)
        if inline:
            # Read twice (the mirrors, the changelog): cached, deserialized (cheaper kept as objects).
            decoded = decoded.persist(StorageLevel.MEMORY_AND_DISK_DESER)
            pinned.append(decoded)
            with step("not_yet_written"):
                # Materialized with its lineage cut: the mirrors' concurrent MERGEs then plan over plain rows.
                # A short plan is quicker to plan, and each MERGE plans over it.
                full = dedup.not_yet_written(changelog_rows(decoded, 1), seen)
                full = full.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
                checkpointed.append(full)
            applied = apply(spark, settings, full, app_id, batch_id, step=step)
            report.tables, report.tombstones_expired = applied.tables, applied.tombstones_expired

        after = -1 if changelog_version is None else changelog_version
        counted: BatchStats | None = None
        if seen is not None:
            # A replay found records already written: the others are counted first (a pass of their own, on
            # this rare path), and with none left the batch commits nothing.
            with step("batch_stats"):
                counted = batch_stats.collect(dedup.not_yet_written(changelog_rows(decoded), seen))
        commit: list[dict[str, Any]] | None = None
        bad: int | None = None  # unknown: the append was skipped (see below) or not run
        if counted is None or counted.rows:
            with step("changelog_append"):
                observed = Observation(f"binlake-batch-{uuid.uuid4().hex}")
                rows = changelog_rows(decoded, version, observed=observed)
                delta.append(
                    dedup.not_yet_written(rows, seen),
                    changelog_uri,
                    app_id,
                    batch_id,
                    partition_by=list(settings.changelog_partition_by),
                )
                commit = table.batch_commit(spark, changelog_uri, after=after, app_id=app_id, batch_id=batch_id)
                # No commit: Delta skipped the write (this batch committed it before a crash), so the job did
                # not run and reports no observation; the quarantine then reads the batch for itself.
                if commit is not None:
                    report.visible_at_s = time.time()
                    seen_now = observed.get
                    bad, report.records = int(seen_now[BAD]), int(seen_now[RECORDS])
        with step("quarantine"):
            if bad is None:
                report.records = raw.count()
            if bad is None or bad:
                bad_seen = (
                    None
                    if quarantine_version is None
                    else dedup.written_in(delta.read_at(spark, quarantine_uri, quarantine_version), ranges)
                )
                unreadable = dedup.not_yet_written(table.quarantine_rows(decoded), bad_seen)
                unreadable = unreadable.persist(StorageLevel.MEMORY_AND_DISK)
                pinned.append(unreadable)
                report.quarantined = unreadable.count()
                if report.quarantined:
                    delta.append(unreadable, quarantine_uri, app_id, batch_id)
        if counted is None:
            with step("batch_stats"):
                # Nothing of the batch was in the changelog: its rows are those of its commit (or, replayed,
                # of the commit it made before the crash).
                counted = table.appended_stats(spark, changelog_uri, commit, ranges)
        report.stats = counted
        report.changelog_rows = counted.rows
        if inline:
            report.older_than_retention = older_than_retention(settings, counted)
    finally:
        for frame in pinned:
            frame.unpersist()
        for frame in checkpointed:
            delta.release(frame)
    return report
