"""One micro-batch of the changelog query, exactly once: decode, [mirrors,] quarantine, changelog.

Order matters for crash safety. The batch first pins the changelog and
quarantine versions and keeps only records those versions do not hold (by
Kafka coordinates: one aggregation, ``changelog.survey``, finds the batch's
offsets and partitions, and the statistics of its good records, which are the
statistics of the append whenever the pinned changelog holds none of them);
then, with ``mirrors=inline``, it MERGEs the mirrors
(with ``mirrors=follow`` the mirror query does that from the changelog,
``mirror_batch``), appends the quarantine and appends the changelog last,
every commit under (app id, batch id). After a
crash anywhere in between, Spark replays the same batch id with the same
offsets: committed steps are skipped by Delta's txn check, and since the
changelog commit comes last, the pinned "not yet written" set is the same as
the first time. A replay of a topic range under a new checkpoint (new app id)
finds every record already in the changelog and changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark import StorageLevel
from pyspark.sql import DataFrame

from spark_sink import batch_stats, changelog, delta_tables, mirror
from spark_sink.batch_stats import BatchStats
from spark_sink.settings import SinkSettings
from spark_sink.source import decode
from spark_sink.steps import StepClock


@dataclass(slots=True)
class BatchReport:
    batch_id: int
    changelog_rows: int = 0
    quarantined: int = 0
    tables: list[str] = field(default_factory=list)
    stats: BatchStats = field(default_factory=BatchStats)
    """Rows per (table, op) and event times of the rows appended to the changelog (metrics, benchmark)."""
    steps: StepClock = field(default_factory=StepClock)
    """Wall time per step of ``process`` (metrics, benchmark)."""
    visible_at_s: float | None = None
    """Wall time (epoch s) when the batch's commits were visible: set by the job when ``process`` returns."""


def process(
    settings: SinkSettings,
    app_id: str,
    raw: DataFrame,
    batch_id: int,
    *,
    version: int = changelog.VERSION,
    frontier: changelog.Frontier | None = None,
) -> BatchReport:
    """One micro-batch into a changelog of layout ``version`` (``changelog``: 2, or 1 for an earlier lake).

    ``frontier``: the query's knowledge of where the changelog holds nothing yet (one per query run;
    None: every batch asks the changelog).
    """
    spark = raw.sparkSession
    report = BatchReport(batch_id)
    inline = settings.mirrors == "inline"
    # The mirrors need the images; a version-2 changelog alone needs only the envelope (much cheaper).
    # Deserialized: a cache read twice within the batch is cheaper kept as objects than serialized.
    decoded = decode(raw, envelope=version != 1 and not inline).persist(StorageLevel.MEMORY_AND_DISK_DESER)
    pinned: list[DataFrame] = [decoded]
    checkpointed: list[DataFrame] = []
    step = report.steps.step
    try:
        changelog_uri, quarantine_uri = settings.changelog_uri(), settings.quarantine_uri()
        with step("pin_versions"):
            changelog_version = delta_tables.current_version(spark, changelog_uri)
            quarantine_version = delta_tables.current_version(spark, quarantine_uri)

        rows = changelog.changelog_rows(decoded, version)
        with step("changelog_partitions"):
            where, good_stats = changelog.survey(decoded, list(settings.changelog_partition_by))
        with step("not_yet_written"):
            seen = None
            unproven = where.ranges if frontier is None else frontier.unproven(where.ranges)
            held: dict[tuple[str, int], int] = {}
            if changelog_version is not None and unproven:
                written = delta_tables.read_at(spark, changelog_uri, changelog_version)
                held = changelog.held_from(written, unproven)
                if any(held.get((r.topic, r.partition), r.last + 1) <= r.last for r in unproven):
                    seen = changelog.written_in(written, where.partitions, where.ranges)
            if frontier is not None:
                for r in unproven:
                    if (r.topic, r.partition) not in held:
                        frontier.prove(r.topic, r.partition, r.first)
            fresh = changelog.not_yet_written(rows, seen)
            full = fresh
            if inline:
                # Materialized with its lineage cut: the mirrors' concurrent MERGEs then plan over plain rows.
                # Spark's from_avro expression is not safe to plan from several threads at once (its
                # options map is evaluated through a shared builder), and a short plan is quicker to plan.
                full = changelog.not_yet_written(changelog.changelog_rows(decoded, 1), seen)
                full = full.localCheckpoint(eager=True, storageLevel=StorageLevel.MEMORY_AND_DISK)
                checkpointed.append(full)
            # With mirrors=follow, the append reads `fresh` from the cached batch.
        bad_seen = (
            None
            if quarantine_version is None
            else changelog.written_in(delta_tables.read_at(spark, quarantine_uri, quarantine_version), {}, where.ranges)
        )
        bad = changelog.not_yet_written(changelog.quarantine_rows(decoded), bad_seen)

        if inline:
            report.tables = mirror.apply(spark, settings, full, app_id, batch_id, step=step)
        with step("quarantine"):
            report.quarantined = bad.count() if where.bad else 0
            if report.quarantined:
                delta_tables.append(bad, quarantine_uri, app_id, batch_id)
        with step("batch_stats"):
            # The survey's statistics are those of every good record: the fresh ones unless a replay found some.
            report.stats = good_stats if seen is None else batch_stats.collect(fresh)
            report.changelog_rows = report.stats.rows
        if report.changelog_rows:
            with step("changelog_append"):
                delta_tables.append(
                    fresh, changelog_uri, app_id, batch_id, partition_by=list(settings.changelog_partition_by)
                )
    finally:
        for frame in pinned:
            frame.unpersist()
        for frame in checkpointed:
            delta_tables.release(frame)
    return report
