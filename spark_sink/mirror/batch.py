"""One micro-batch of the mirror query (``mirrors=follow``): new changelog rows -> mirrors and history.

The mirror query streams the changelog Delta table (Delta's streaming source:
each micro-batch is a range of changelog versions, recorded in the mirror
query's own checkpoint before the batch runs) into ``apply.apply``, the same
code the changelog query runs with ``mirrors=inline``. Why a second query:
the changelog commit of a micro-batch then waits for no MERGE, so events land
in the lake within seconds, while the mirrors' fixed costs per table (a schema
check, a fold, a MERGE and a tombstone commit each) are paid once per mirror
batch, which covers many changelog batches when the input is heavy.

Exactly once: the changelog holds every event once (``changelog.batch``), and a replayed
mirror batch reads the same changelog versions; every mirror, tombstone and
history commit is idempotent under (mirror app id, batch id). A mirror batch
replayed under a new checkpoint (a new app id) re-applies events the mirrors
already hold, which their floors ignore (``tombstones``, ``merge``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.spark_sink import delta
from binlake.spark_sink.mirror import apply, batch_facts, batch_rows, tails
from binlake.spark_sink.observe.batch_stats import BatchStats
from binlake.spark_sink.observe.steps import StepClock
from binlake.spark_sink.settings import SinkSettings

FLUSH_APP: Final = ".flush"
"""Suffix of the transaction app id of the MERGEs of tails between batches (``flush``)."""


@dataclass(slots=True)
class MirrorReport:
    batch_id: int
    rows: int = 0
    """Changelog rows the batch read (events applied or ignored as older than the mirror)."""
    tables: list[str] = field(default_factory=list)
    stats: BatchStats = field(default_factory=BatchStats)
    """Rows per (table, op) and event times of the batch's changelog rows (mirror freshness)."""
    steps: StepClock = field(default_factory=StepClock)
    older_than_retention: int = 0
    """Events older than the tombstone retention when applied (``apply.older_than_retention``)."""
    tombstones_expired: int = 0
    """Tombstones the batch dropped as older than the retention."""
    started_at_s: float = 0.0
    deferred_rows: int = 0
    """Row events left in the changelog for a later MERGE after the batch (``tails``), of all tables."""
    deferred_tables: int = 0
    """Tables with such row events after the batch."""
    visible_at_s: float | None = None
    """Wall time (epoch s) when the batch's mirror commits were visible: set by the job when ``process`` returns."""


def process(settings: SinkSettings, app_id: str, rows: DataFrame, batch_id: int) -> MirrorReport:
    """Apply one range of changelog rows to the mirrors (``rows``: the Delta source's micro-batch)."""
    report = MirrorReport(batch_id)
    step = report.steps.step
    spark = rows.sparkSession
    # Nothing is decoded or cached here: the statistics, control events and descriptors read the envelope
    # columns (and the descriptors alone from the bodies), and the bodies are decoded where they are used: by
    # the batch's one fold of its keyed tables (``fold``), a key-less table's append and a history table's
    # versions. Materializing the decoded images of a whole batch cost more than decoding them.
    with step("batch_rows"):
        read = batch_rows.batch_rows(settings, rows, batch_id)
    with step("batch_facts"):
        facts = batch_facts.collect(read.rows)
    if read.expected is not None and facts.stats.rows != read.expected:
        read = batch_rows.mismatch(read, batch_id, facts.stats.rows)
        with step("batch_facts"):
            facts = batch_facts.collect(read.rows)
    report.stats = facts.stats
    report.rows = report.stats.rows
    with step("tails"):
        _, before = tails.read(spark, settings, before=batch_id)
        decision = tails.decide(settings, before, facts, versions=read.versions, now_s=time.time())
    applying, applied_facts = read.rows, facts
    if decision.flush:
        with step("tails"):
            flushed = tails.tail_rows(
                spark, settings.changelog_uri(), decision.flush, through=before.through, columns=read.rows.columns
            )
            applying = applying.unionByName(flushed)
    if decision.defer:
        applying = applying.where(~F.col("source_table").isin(sorted(decision.defer)))
    if decision.flush:
        with step("batch_facts"):
            applied_facts = batch_facts.collect(applying)
    elif decision.defer:
        applied_facts = tails.without(facts, decision.defer)
    if decision.flush or applied_facts.descriptors or applied_facts.control or (report.rows and not decision.defer):
        applied = apply.apply(spark, settings, applying, app_id, batch_id, step=step, facts=applied_facts)
        report.tables, report.tombstones_expired = applied.tables, applied.tombstones_expired
        report.older_than_retention = apply.older_than_retention(settings, report.stats)
    report.deferred_rows, report.deferred_tables = decision.after.rows(), len(decision.after.tables)
    with step("tails"):
        if decision.after.tables or before.tables:
            tails.write(spark, settings, batch_id, decision.after)
    return report


def flush(spark: SparkSession, settings: SinkSettings, app_id: str, *, every: bool) -> MirrorReport | None:
    """MERGE the tails the last committed mirror batch left (``every``: all of them; else only when one is due),
    between batches: under the app id ``app_id`` + ``FLUSH_APP`` and that batch's id. None when nothing to do.

    The caller keeps the mirror query's batches out meanwhile (``job``: one lock for both).
    """
    batch_id, before = tails.read(spark, settings, committed=True)
    if not before.tables or not (every or tails.due(settings, before, time.time())):
        return None
    report = MirrorReport(batch_id)
    step = report.steps.step
    uri = settings.changelog_uri()
    with step("tails"):
        columns = delta.schema(spark, uri).fieldNames()  # from the log: no read of the table planned for them
        rows = tails.tail_rows(spark, uri, before.tables, through=before.through, columns=columns)
    with step("batch_facts"):
        facts = batch_facts.collect(rows)
    applied = apply.apply(spark, settings, rows, app_id + FLUSH_APP, batch_id, step=step, facts=facts)
    report.tables, report.tombstones_expired = applied.tables, applied.tombstones_expired
    tails.write(spark, settings, batch_id, tails.Tails(before.through), flushed=True)
    return report
