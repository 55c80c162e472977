"""The changelog and quarantine appended by delta-rs (no Spark), exactly once per Kafka record.

A batch of Kafka records (``arrow_rows.changelog_batch``) becomes at most two
commits: first the quarantine's (its rejects), then the changelog's (its
events). Each commit carries, for every Kafka partition the batch read, a
Delta transaction action: app id ``<app id>/<topic>/<partition>``, version the
next offset to read. The Delta logs themselves are the checkpoint:

- the changelog's version ``V`` of a partition says every record below ``V``
  is written to both tables (the quarantine's commit of a batch comes first);
- the quarantine's version ``Q`` says its rejects below ``Q`` are written
  (``Q > V`` after a crash between the two commits).

A batch replayed after a crash (the same records, or more) writes only the
events at or above ``V`` and the rejects at or above ``max(Q, V)``: nothing
twice, nothing lost. A lake whose changelog the Spark sink wrote (no
transaction of this app id for a partition) resumes after the highest offset
the changelog holds for it (the Spark sink appends a partition's records in
offset order, so what it holds below that is complete), and looks for rejects
again from the quarantine's last one (``resume``). One writer per lake: two
writers would each append what the other has not committed yet.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

from arro3.core import Array, DataType, Field, RecordBatch, Schema
from deltalake import CommitProperties, DeltaTable, QueryBuilder, Transaction, write_deltalake
from deltalake.exceptions import TableNotFoundError

from binlake.spark_sink.changelog.arrow_rows import (
    ChangelogBatch,
    KafkaRecord,
    Rejected,
    changelog_schema,
    kafka_columns,
)
from binlake.spark_sink.layout import CHANGE_FEED, CHANGELOG_VERSION, PROP_VERSION, STATS, STATS_COLUMNS
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.observe import batch_stats
from binlake.spark_sink.observe.batch_stats import BatchStats

Partition = tuple[str, int]


def txn_app_id(app_id: str, topic: str, partition: int) -> str:
    """The Delta transaction app id under which a commit records how far ``partition`` of ``topic`` is read."""
    return f"{app_id}/{topic}/{partition}"


def quarantine_app_id(app_id: str, topic: str, partition: int) -> str:
    """The app id under which a changelog commit records how far the quarantine is written for ``partition``."""
    return f"{txn_app_id(app_id, topic, partition)}/quarantine"


def quarantine_schema() -> Schema:
    """The quarantine's columns, as the Spark sink creates it (``changelog.table.quarantine_rows``)."""
    kafka = [changelog_schema().field(name) for name in ("_kafka_topic", "_kafka_partition", "_kafka_offset")]
    return Schema(
        [
            *kafka,
            changelog_schema().field("_kafka_timestamp"),
            Field("key", DataType.binary(), True),
            Field("value", DataType.binary(), True),
            Field("reason", DataType.string(), True),
        ]
    )


def create_changelog(uri: str, partition_by: list[str]) -> bool:
    """Create the changelog (layout ``CHANGELOG_VERSION``) where there is none; return whether this did.

    One commit, as the Spark sink makes it: its version property, change data feed and statistics columns.
    delta-rs refuses to create a table with a property of its own (``binlake.*``), and a creation followed by a
    property change would leave, killed in between, a table that reads as layout 1. So the first commit is
    made by delta-rs in a folder of its own, given the property, and linked into the changelog's log in one
    step (a hard link fails where a first commit exists: two creators, one table). Local lakes only.
    """
    root = local_root(uri)
    if root is None:
        raise ValueError(
            f"the changelog writer without Spark creates a changelog on a local path only; {uri} has none yet: "
            "create it once with the Spark sink (binlake sink --trigger available-now), then start this writer"
        )
    log = root / "_delta_log"
    first = log / f"{0:020d}.json"
    if first.exists():
        return False
    staging = root.parent / f".{root.name}.creating-{uuid.uuid4().hex}"
    try:
        DeltaTable.create(
            str(staging),
            changelog_schema(),
            partition_by=partition_by,
            configuration={CHANGE_FEED: "true", STATS_COLUMNS: ",".join(STATS)},
        )
        actions = [json.loads(line) for line in (staging / "_delta_log" / first.name).read_text().splitlines() if line]
        for action in actions:
            if "metaData" in action:
                action["metaData"]["configuration"][PROP_VERSION] = str(CHANGELOG_VERSION)
        log.mkdir(parents=True, exist_ok=True)
        written = log / f".{first.name}.{uuid.uuid4().hex}.tmp"
        written.write_text("".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions))
        try:
            os.link(written, first)
        except FileExistsError:
            return False
        finally:
            written.unlink()
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


@dataclass(frozen=True, slots=True)
class Resume:
    """Where a partition's records still have to be written: events from ``changelog``, rejects from
    ``quarantine`` (None: from the partition's start)."""

    changelog: int | None
    quarantine: int | None

    @property
    def read_from(self) -> int | None:
        """The first offset to read (None: the start)."""
        if self.changelog is None or self.quarantine is None:
            return None
        return min(self.changelog, self.quarantine)


@dataclass(frozen=True, slots=True)
class Written:
    """What one batch committed."""

    changelog_rows: int
    quarantined: int
    skipped: int
    """Records already written before (a replay after a crash)."""
    visible_at_s: float | None
    """Wall time (epoch s) when the changelog commit was visible (None: the batch had no new event)."""
    stats: BatchStats
    """Rows per (table, op) and event times of the events it appended (the sink's metrics)."""


class DeltaRsChangelog:
    """The lake's changelog and quarantine, appended by this process under per-partition transaction ids."""

    def __init__(self, changelog_uri: str, quarantine_uri: str, app_id: str, *, partition_by: list[str]) -> None:
        self.changelog_uri = changelog_uri
        self.quarantine_uri = quarantine_uri
        self.app_id = app_id
        self.partition_by = partition_by
        self._resume: dict[Partition, Resume] = {}

    def resume(self, topic: str, partitions: Iterable[int]) -> dict[int, Resume]:
        """Where each partition is written up to, from the two tables' logs (and rows, for a lake without
        this app id's transactions); kept as the filter of the batches that follow. Creates the changelog where
        there is none (``create_changelog``)."""
        create_changelog(self.changelog_uri, self.partition_by)
        changelog_table, quarantine_table = DeltaTable(self.changelog_uri), _open(self.quarantine_uri)
        layout = changelog_table.metadata().configuration.get(PROP_VERSION, "1")
        if layout != str(CHANGELOG_VERSION):
            raise ValueError(
                f"the changelog at {self.changelog_uri} has layout {layout} (an earlier release made it); the writer "
                f"without Spark writes layout {CHANGELOG_VERSION} only: keep the Spark sink's changelog query for it"
            )
        found: dict[int, Resume] = {}
        for partition in partitions:
            changelog = _txn(changelog_table, txn_app_id(self.app_id, topic, partition))
            # The quarantine's progress: recorded in the changelog's commit, and in the quarantine's own, which
            # comes first (ahead of the changelog's after a crash between the two).
            recorded = [
                _txn(changelog_table, quarantine_app_id(self.app_id, topic, partition)),
                _txn(quarantine_table, txn_app_id(self.app_id, topic, partition)),
            ]
            known = [v for v in recorded if v is not None]
            quarantine = max(known) if known else None
            if changelog is None:  # nothing of this app id: a lake the Spark sink wrote, or a new one
                changelog = _after_highest(changelog_table, topic, partition)
                if quarantine is None:
                    # The Spark sink commits a batch's rejects after its events: those of its last batch may be
                    # missing, so rejects are looked for again from the quarantine's last one (None: the start).
                    quarantine = _after_highest(quarantine_table, topic, partition)
            found[partition] = self._resume[(topic, partition)] = Resume(changelog, quarantine)
        return found

    def write(self, batch: ChangelogBatch, records: list[KafkaRecord]) -> Written:
        """Append the batch's new rejects, then its new events, each commit recording how far every partition
        of ``records`` (the batch's records, in offset order per partition) is written."""
        reads: dict[Partition, int] = {}
        for record in records:
            key = (record.topic, record.partition)
            reads[key] = max(reads.get(key, 0), record.offset + 1)
        # A re-read (of a lake the Spark sink began) may start below where a table is written to: never back.
        after = {key: self._after(key, read) for key, read in sorted(reads.items())}
        rejects = [r for r in batch.rejected if self._new(r.record.topic, r.record.partition, r.record.offset, True)]
        coordinates = zip(
            batch.rows.column("_kafka_topic").to_pylist(),
            batch.rows.column("_kafka_partition").to_pylist(),
            batch.rows.column("_kafka_offset").to_pylist(),
            strict=True,
        )
        keep = [self._new(topic, partition, offset, False) for topic, partition, offset in coordinates]
        skipped = len(batch.rejected) - len(rejects) + keep.count(False)
        if rejects:
            quarantined = [Transaction(txn_app_id(self.app_id, t, p), q) for (t, p), (_, q) in after.items()]
            write_deltalake(
                self.quarantine_uri,
                _quarantine_rows(rejects),
                mode="append",
                commit_properties=CommitProperties(app_transactions=quarantined),
            )
        visible: float | None = None
        rows = (
            batch.rows if all(keep) else batch.rows.take(Array([i for i, k in enumerate(keep) if k], DataType.int64()))
        )
        if rows.num_rows or any(self._resume.get(key) != Resume(*done) for key, done in after.items()):
            # A replay of records all written before commits nothing.
            txns: list[Transaction] = []
            for (topic, partition), (events, rejected) in after.items():
                txns.append(Transaction(txn_app_id(self.app_id, topic, partition), events))
                txns.append(Transaction(quarantine_app_id(self.app_id, topic, partition), rejected))
            write_deltalake(
                self.changelog_uri,
                rows,
                mode="append",
                partition_by=self.partition_by,
                commit_properties=CommitProperties(app_transactions=txns),
            )
            visible = time.time()
        self._resume.update({key: Resume(*done) for key, done in after.items()})
        stats = batch_stats.from_values(
            rows.column("source_table").to_pylist(), rows.column("op").to_pylist(), rows.column("ts_ms").to_pylist()
        )
        return Written(rows.num_rows, len(rejects), skipped, visible if rows.num_rows else None, stats)

    def _after(self, key: Partition, read: int) -> tuple[int, int]:
        """A partition's (changelog, quarantine) progress once a batch has read it up to ``read`` (the next
        offset)."""
        before = self._resume.get(key, Resume(None, None))
        return (
            read if before.changelog is None else max(before.changelog, read),
            read if before.quarantine is None else max(before.quarantine, read),
        )

    def _new(self, topic: str, partition: int, offset: int, reject: bool) -> bool:
        """Whether a record (a reject, or an event) is not in its table yet."""
        resume = self._resume.get((topic, partition), Resume(None, None))
        start = resume.quarantine if reject else resume.changelog
        return start is None or offset >= start


def _open(uri: str) -> DeltaTable | None:
    try:
        return DeltaTable(uri)
    except TableNotFoundError:
        return None


def _txn(table: DeltaTable | None, app_id: str) -> int | None:
    """The version of the table's transaction ``app_id`` (None: none, or no table)."""
    version = None if table is None else table.transaction_version(app_id)
    return None if version is None else int(version)


def _after_highest(table: DeltaTable | None, topic: str, partition: int) -> int | None:
    """One past the highest offset of the partition the table holds (None: none, or no table)."""
    if table is None:
        return None
    quoted = topic.replace("'", "''")
    reader = (
        QueryBuilder()
        .register("t", table)
        .execute(
            f"SELECT max(_kafka_offset) AS m FROM t WHERE _kafka_topic = '{quoted}' AND _kafka_partition = {partition}"
        )
    )
    values = [v for batch in reader.read_all().to_batches() for v in batch.column("m").to_pylist()]
    highest = values[0] if values else None
    return None if highest is None else int(highest) + 1


def _quarantine_rows(rejects: list[Rejected]) -> RecordBatch:
    schema = quarantine_schema()
    records = [r.record for r in rejects]
    return RecordBatch.from_arrays(
        [
            *kafka_columns(records),
            Array([r.key for r in records], DataType.binary()),
            Array([r.value for r in records], DataType.binary()),
            Array([r.reason for r in rejects], DataType.string()),
        ],
        schema=schema,
    )
