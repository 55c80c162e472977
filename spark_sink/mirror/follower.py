"""The mirror query without Spark: follow the changelog's versions, apply each range with ``delta_rs_mirror``.

A batch is a range of changelog versions (``from``..``to``). Before it runs, the range is logged in the
mirror checkpoint as Structured Streaming's Delta source logs it (``offsets/<batch id>``: the version
after the batch); once every commit of the batch is made, ``commits/<batch id>``. A batch logged but not
committed (a crash) is run again with the same range and id, so its commits are skipped where made
(``delta_rs_mirror``'s transactions) and made where not; the next batch starts after the last committed
one. The log is the one ``current_state.applied_through`` reads, so current-state reads fold only the
changelog's tail past what the mirrors hold, whichever mirror writer made them.

The changelog's rows of a range are read from its change data feed (inserted rows), or, for a first
batch or where the feed does not reach back, from the table as of ``to`` (its first batch reads every
row up to then). The checkpoint must be a local path (the writer without Spark runs beside the lake's
volume, as the changelog writer does).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from deltalake import DeltaTable, QueryBuilder
from deltalake.exceptions import TableNotFoundError

from binlake.spark_sink.changelog.table import change_feed_from
from binlake.spark_sink.layout import BODY
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.mirror import table_rows
from binlake.spark_sink.mirror.current_state import applied_by
from binlake.spark_sink.mirror.delta_rs_mirror import Applied, DeltaRsMirrors, MirrorWriteError
from binlake.spark_sink.observe.steps import StepClock
from binlake.spark_sink.settings import SinkSettings

log = logging.getLogger("binlake.sink.mirrors")
MAX_VERSIONS: Final = 200
"""Changelog versions per batch at most (a writer commits about one a second: minutes of catching up)."""
MAX_ROWS: Final = 100_000
"""Changelog rows per batch at most, where the versions' commit files say (at least one version per batch): a
batch's events are held decoded in memory, about 2 KB each."""


@dataclass(frozen=True, slots=True)
class FollowedBatch:
    """One batch of the mirror writer: its id, changelog range, what it applied, and when."""

    batch_id: int
    first_version: int
    last_version: int
    applied: Applied
    started_at_s: float
    ended_at_s: float
    steps: StepClock = field(default_factory=StepClock)
    """Wall time per step (``binlake_sink_batch_step_seconds``)."""


class Progress:
    """The mirror checkpoint's offset and commit logs (module doc)."""

    def __init__(self, checkpoint: str) -> None:
        root = local_root(checkpoint)
        if root is None:
            raise MirrorWriteError(
                f"the mirror checkpoint {checkpoint} is not a local path: the mirror writer without Spark keeps its "
                "progress on a file system (set BINLAKE_SINK_MIRROR_CHECKPOINT_URI to a path)"
            )
        self.offsets = root / "offsets"
        self.commits = root / "commits"

    @staticmethod
    def _ids(folder: Path) -> list[int]:
        return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() else []

    def next_version(self, batch_id: int) -> int:
        """The first changelog version after batch ``batch_id``: read from its offset log entry as the
        current-state reads read it (``current_state.applied_by``)."""
        return applied_by((self.offsets / str(batch_id)).read_text()) + 1

    def state(self) -> tuple[int | None, int | None]:
        """(the last committed batch, a logged batch after it not committed yet)."""
        done = self._ids(self.commits)
        committed = done[-1] if done else None
        logged = [b for b in self._ids(self.offsets) if committed is None or b > committed]
        return committed, (logged[0] if logged else None)

    def log(self, batch_id: int, table_id: str, next_version: int) -> None:
        offset = {
            "sourceVersion": 1,
            "reservoirId": table_id,
            "reservoirVersion": next_version,
            "index": -1,
            "isStartingVersion": False,
        }
        metadata = {"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000), "conf": {}}
        _write_new(self.offsets / str(batch_id), f"v1\n{json.dumps(metadata)}\n{json.dumps(offset)}")

    def commit(self, batch_id: int) -> None:
        _write_new(self.commits / str(batch_id), 'v1\n{"nextBatchWatermarkMs":0}')


def _write_new(path: Path, text: str) -> None:
    """Write ``path`` whole (a temporary file renamed: a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def _changelog(uri: str) -> DeltaTable | None:
    try:
        return DeltaTable(uri)
    except TableNotFoundError:
        return None


def _last_version(uri: str, first: int, last: int) -> int:
    """The last version of a batch starting at ``first``: up to ``last``, as long as the versions' added rows
    (their commit files' statistics) stay within ``MAX_ROWS``; ``last`` where the log is not on a local disk."""
    root = local_root(uri)
    if root is None:
        return last
    rows = 0
    for version in range(first, last + 1):
        try:
            lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
        except OSError:
            return last  # a version only in a checkpoint: no statistics to go by
        for line in lines:
            added = json.loads(line).get("add")
            if added and added.get("stats"):
                rows += int(json.loads(added["stats"]).get("numRecords", 0))
        if rows > MAX_ROWS and version > first:
            return version - 1
    return last


def read_range(
    changelog: DeltaTable, first: int, last: int, *, only: Collection[str] | None = None
) -> table_rows.Batch:
    """The events of changelog versions ``first``..``last`` (``first`` 0: every row up to ``last``);
    ``only``: just these tables' (the others' bodies are not decoded)."""
    if not _in_feed(changelog, first):
        # The whole changelog as of ``last``: events the mirrors hold already are ignored by their floors.
        snapshot = DeltaTable(changelog.table_uri, version=last)
        query = QueryBuilder().register("c", snapshot).execute(f"SELECT source_table, {BODY} FROM c")
        tables: list[str] = []
        bodies: list[bytes] = []
        for batch in query.read_all().to_batches():
            for table, body in zip(
                batch.column("source_table").to_pylist(), batch.column(BODY).to_pylist(), strict=True
            ):
                if only is None or table in only:
                    tables.append(table)
                    bodies.append(body)
        return table_rows.read(tables, bodies)
    return _joined(_feed_bodies(changelog, first, last, only))


def _in_feed(changelog: DeltaTable, first: int) -> bool:
    """Whether versions from ``first`` on are read from the changelog's change data feed."""
    feed_from = change_feed_from(changelog.metadata().configuration)
    return first > 0 and feed_from is not None and first >= feed_from


def _feed_bodies(
    changelog: DeltaTable, first: int, last: int, only: Collection[str] | None
) -> dict[int, tuple[list[str], list[bytes]]]:
    """Per version of ``first``..``last`` (each one, rows or not) its inserted rows' source tables and bodies."""
    found: dict[int, tuple[list[str], list[bytes]]] = {v: ([], []) for v in range(first, last + 1)}
    columns = ["source_table", BODY, "_change_type", "_commit_version"]
    feed = changelog.load_cdf(starting_version=first, ending_version=last, columns=columns)
    for batch in feed.read_all().to_batches():
        for table, body, kind, version in zip(*(batch.column(c).to_pylist() for c in columns), strict=True):
            if kind != "insert" or (only is not None and table not in only):
                continue
            tables, bodies = found[version]
            tables.append(table)
            bodies.append(body)
    return found


def _joined(versions: dict[int, tuple[list[str], list[bytes]]]) -> table_rows.Batch:
    tables: list[str] = []
    bodies: list[bytes] = []
    for version in sorted(versions):
        tables += versions[version][0]
        bodies += versions[version][1]
    return table_rows.read(tables, bodies)


def run(
    settings: SinkSettings,
    app_id: str,
    *,
    stop: threading.Event,
    on_batch: Callable[[FollowedBatch], None] | None = None,
    on_tick: Callable[[], None] | None = None,
    until_caught_up: bool = False,
    store: DeltaRsMirrors | None = None,
) -> None:
    """Apply the changelog to the mirrors until ``stop`` is set (``until_caught_up``: until a batch finds no
    version it has not applied). ``on_tick``: called each time the loop comes round (liveness). ``store``: the
    mirrors to write (tests give one that fails)."""
    store = store if store is not None else DeltaRsMirrors(settings, app_id)
    progress = Progress(settings.mirror_checkpoint())
    interval = settings.mirror_trigger_interval_s
    next_start = 0.0
    while not stop.is_set():
        if on_tick is not None:
            on_tick()
        # A batch starts at most every ``mirror_trigger_interval_s`` (a processing-time trigger): a longer one
        # is followed at once; between them the loop still comes round each second (liveness, a stop).
        wait = min(1.0, next_start - time.monotonic())
        if wait > 0 and not until_caught_up:
            stop.wait(wait)
            continue
        changelog = _changelog(settings.changelog_uri())
        if changelog is None:
            stop.wait(min(1.0, interval))
            continue
        committed, pending = progress.state()
        first = 0 if committed is None else progress.next_version(committed)
        if pending is not None:
            batch_id = pending
            last = progress.next_version(pending) - 1
        else:
            latest = changelog.version()
            if latest < first:
                if until_caught_up:
                    return
                next_start = time.monotonic() + interval
                continue
            batch_id = 0 if committed is None else committed + 1
            last = _last_version(settings.changelog_uri(), first, min(latest, first + MAX_VERSIONS - 1))
            progress.log(batch_id, str(changelog.metadata().id), last + 1)
        started = time.time()
        next_start = time.monotonic() + interval
        steps = StepClock()
        with steps.step("read_changelog"):
            events = read_range(changelog, first, last)
        applied = store.apply(events, batch_id, steps=steps)
        progress.commit(batch_id)
        ended = time.time()
        log.info(
            "mirror batch %d: changelog versions %d-%d, %d events, %d tables, %d keys deleted (%.2f s)",
            batch_id,
            first,
            last,
            applied.rows,
            len(applied.tables),
            applied.deleted,
            ended - started,
        )
        if on_batch is not None:
            on_batch(FollowedBatch(batch_id, first, last, applied, started, ended, steps))
