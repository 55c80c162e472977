"""Deferred mirror tails: a small table's changes wait in the changelog until they are worth a MERGE.

A MERGE costs a table about half a second of driver time however few rows it
changes (a Delta commit, its jobs, its snapshot), so a batch touching many
small tables pays mostly for commits. With ``BINLAKE_SINK_MIRROR_DEFER_ROWS``
> 0, a mirror batch leaves out a keyed table whose pending row events (the
batch's and those deferred before) are fewer than that: they stay in the
changelog, the table's *tail*, and the table is MERGEd by a later batch,
once its tail has grown to that many rows or its oldest deferral is
``BINLAKE_SINK_MIRROR_DEFER_MAX_S`` old. Reads of the current state
(``current_state``: ``binlake current``) fold each table's tail over its
mirror, so they see every change at once; a reader of the mirror table
itself sees the table up to that much later.

Never deferred: a table with a TRUNCATE or DDL in the batch, a key-less
table, a table with a history table, and every table of a batch that does
not cover whole changelog versions (its rows could not be read again by
version).

The tails are kept in the mirror query's checkpoint, one small JSON file per
batch (``binlake-tails/<batch id>``: the changelog version the batch read through, and
per deferred table the first changelog version of its tail, its rows and
when it was first deferred), written before the batch ends: a batch reads the
file of the batch before it, so a replayed batch decides again from the same
state. A MERGE of a tail reads the tail's rows back from the changelog's
change data feed. Applying a change a mirror already holds changes nothing
(each column's floor ignores it), so a tail read twice (a crash between a
MERGE and the file) is harmless.

With no batch coming (the input is idle), the sink flushes tails that are due
between batches (``flush``), and an available-now run flushes every tail
before it ends, so a finished run leaves the mirrors caught up.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Final

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from binlake.spark_sink.changelog.table import inserted_between
from binlake.spark_sink.hadoop_files import HadoopFiles
from binlake.spark_sink.mirror.batch_facts import BatchFacts
from binlake.spark_sink.settings import SinkSettings

FOLDER: Final = "binlake-tails"
FLUSHED: Final = ".flushed"
"""Suffix of the file a flush between batches writes after batch N (``N.flushed``): it replaces ``N``."""
KEEP: Final = 3
"""Tails files kept behind the newest (older ones are deleted as each batch writes its own)."""


@dataclass(frozen=True, slots=True)
class Tail:
    """A table's deferred row events: changelog versions ``first`` to the state's ``through``."""

    first: int
    rows: int
    since_s: float
    """Wall time (epoch s) of the batch that first deferred it."""


@dataclass(frozen=True, slots=True)
class Tails:
    """The deferred tails after a batch: what it read through, and the tables whose changes wait."""

    through: int = -1
    """The newest changelog version the batch read (-1: none known)."""
    tables: dict[str, Tail] = field(default_factory=dict)

    def to_json(self) -> str:
        tables = {name: {"first": t.first, "rows": t.rows, "since_s": t.since_s} for name, t in self.tables.items()}
        return json.dumps({"through": self.through, "tables": tables}, sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Tails:
        found = json.loads(text)
        tables = {
            str(name): Tail(int(t["first"]), int(t["rows"]), float(t["since_s"]))
            for name, t in found.get("tables", {}).items()
        }
        return Tails(int(found.get("through", -1)), tables)

    def rows(self) -> int:
        return sum(t.rows for t in self.tables.values())


@dataclass(frozen=True, slots=True)
class Decision:
    """What a batch does with the tails: which earlier tails it MERGEs, which of its tables it defers."""

    flush: dict[str, Tail]
    """Earlier tails MERGEd by this batch (their rows read back from the changelog)."""
    defer: frozenset[str]
    """The batch's tables left out of it (their rows join their tails)."""
    after: Tails
    """The tails once the batch is done."""


def decide(
    settings: SinkSettings,
    before: Tails,
    facts: BatchFacts,
    *,
    versions: tuple[int, int] | None,
    now_s: float,
) -> Decision:
    """Which tables a batch of whole changelog versions ``versions`` (None: not whole versions) defers, and
    which earlier tails it MERGEs (``before``: the tails after the batch before it).

    A table is deferred while its pending rows (its tail's and the batch's row events) stay under
    ``mirror_defer_rows`` and its tail is younger than ``mirror_defer_max_s``. A batch that cannot defer
    (``versions`` None, deferral off) MERGEs every earlier tail.
    """
    limit = settings.mirror_defer_rows
    if versions is None or limit <= 0:
        return Decision(dict(before.tables), frozenset(), Tails(versions[1] if versions else -1))
    first, through = versions
    keyed = {
        table
        for table, descs in facts.descriptors.items()
        if descs and all(d.primary_key for d in descs) and not settings.wants_history(table)
    }
    flush: dict[str, Tail] = {}
    defer: set[str] = set()
    after: dict[str, Tail] = {}
    for table in sorted(set(before.tables) | set(facts.counts)):
        earlier = before.tables.get(table)
        in_batch = table in facts.counts
        rows = (earlier.rows if earlier else 0) + (facts.counts[table].rows if in_batch else 0)
        since = earlier.since_s if earlier else now_s
        due = rows >= limit or now_s - since >= settings.mirror_defer_max_s
        can_wait = (not in_batch or table in keyed) and table not in facts.control
        if can_wait and not due:
            tail = Tail(earlier.first if earlier else first, rows, since)
            after[table] = tail
            if in_batch:
                defer.add(table)
        elif earlier is not None:
            flush[table] = earlier
    return Decision(flush, frozenset(defer), Tails(through, after))


def due(settings: SinkSettings, tails: Tails, now_s: float) -> bool:
    """Whether a tail is old enough to be MERGEd without waiting for a batch (``flush``)."""
    return any(now_s - t.since_s >= settings.mirror_defer_max_s for t in tails.tables.values())


def tail_rows(spark: SparkSession, uri: str, flush: dict[str, Tail], *, through: int, columns: list[str]) -> DataFrame:
    """The changelog rows of the tails ``flush`` (each table's from its ``first`` version to ``through``), read
    from the changelog's change data feed, in ``columns``."""
    feed = inserted_between(spark, uri, min(t.first for t in flush.values()), through, with_version=True)
    wanted = None
    for table, tail in sorted(flush.items()):
        one = (F.col("source_table") == table) & (F.col("_commit_version") >= tail.first)
        wanted = one if wanted is None else wanted | one
    assert wanted is not None
    return feed.where(wanted).select(*columns)


def without(facts: BatchFacts, tables: frozenset[str]) -> BatchFacts:
    """``facts`` of the batch with the row events of ``tables`` left out (statistics unchanged: the batch's)."""
    return BatchFacts(
        stats=facts.stats,
        control=facts.control,
        descriptors={t: d for t, d in facts.descriptors.items() if t not in tables},
        counts={t: c for t, c in facts.counts.items() if t not in tables},
    )


def _folder(settings: SinkSettings) -> str:
    return f"{settings.mirror_checkpoint()}/{FOLDER}"


def _batch_of(name: str) -> tuple[int, int] | None:
    """(batch id, 1 for a flush's file else 0) of a tails file name; None for anything else."""
    base, flushed = (name[: -len(FLUSHED)], 1) if name.endswith(FLUSHED) else (name, 0)
    return (int(base), flushed) if base.isdigit() else None


def read(
    spark: SparkSession, settings: SinkSettings, *, before: int | None = None, committed: bool = False
) -> tuple[int, Tails]:
    """The newest tails state (of a batch before ``before``; None: of any; ``committed``: of a batch the mirror
    query has committed) and its batch id (-1: none)."""
    files = HadoopFiles(spark)
    folder = _folder(settings)
    done: set[int] | None = None
    if committed:
        done = {int(n) for n in files.names(f"{settings.mirror_checkpoint()}/commits") if n.isdigit()}
    found = sorted(
        (key, name)
        for name in files.names(folder)
        if (key := _batch_of(name)) is not None
        and (before is None or key[0] < before)
        and (done is None or key[0] in done)
    )
    if not found:
        return -1, Tails()
    (batch_id, _), name = found[-1]
    text = files.read(f"{folder}/{name}")
    if text is None:
        raise RuntimeError(f"the mirror tails file {folder}/{name} went away while read: start the sink again")
    try:
        return batch_id, Tails.from_json(text)
    except (ValueError, KeyError, TypeError) as failure:
        raise RuntimeError(
            f"the mirror tails file {folder}/{name} cannot be read ({failure}): it says which tables' changes "
            "the mirrors have not applied yet. Restore it, or delete the mirror checkpoint "
            f"{settings.mirror_checkpoint()} so the mirror query applies the whole changelog again"
        ) from failure


def write(spark: SparkSession, settings: SinkSettings, batch_id: int, tails: Tails, *, flushed: bool = False) -> None:
    """Write the tails after batch ``batch_id`` (a flush's after it: ``flushed``), then drop old files."""
    files = HadoopFiles(spark)
    folder = _folder(settings)
    name = f"{batch_id}{FLUSHED if flushed else ''}"
    if not flushed:
        # A flush's file of an attempt of this batch before a crash (flushes follow committed batches only, but
        # a batch may be replayed after its commit was lost): this batch's own state replaces it.
        files.delete(f"{folder}/{batch_id}{FLUSHED}")
    files.replace(f"{folder}/{name}", tails.to_json())
    for old in files.names(folder):
        key = _batch_of(old)
        if key is not None and key[0] < batch_id - KEEP:
            files.delete(f"{folder}/{old}")
