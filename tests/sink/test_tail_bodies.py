"""``follower.TailBodies``: a reader's overlapping tail reads read each changelog version once, and read what
``read_range`` reads (delta-rs on a real changelog; no broker, no Spark)."""

from __future__ import annotations

import itertools
import shutil
from collections import Counter
from pathlib import Path

import pytest
from deltalake import DeltaTable

from binlake.spark_sink.changelog.arrow_rows import KafkaRecord, changelog_batch
from binlake.spark_sink.changelog.delta_rs import DeltaRsChangelog
from binlake.spark_sink.mirror import follower
from binlake.spark_sink.mirror.table_rows import Batch
from tests.bench import sink_bench

pytestmark = pytest.mark.integration

TOPIC = "binlake.events"
PER_VERSION = 40


def _changelog(path: Path, versions: int, seed: int) -> tuple[DeltaTable, dict[int, Counter[str]]]:
    """A changelog of ``versions`` versions of bench events; per version, its events per source table."""
    store = DeltaRsChangelog(str(path), str(path.parent / "quarantine"), "writer", partition_by=[])
    store.resume(TOPIC, [0])
    items = sink_bench.generate(versions * PER_VERSION, seed=seed)
    written: dict[int, Counter[str]] = {}
    for v in range(versions):
        part = items[v * PER_VERSION : (v + 1) * PER_VERSION]
        records = [
            KafkaRecord(TOPIC, 0, v * PER_VERSION + i, 1_764_000_000_000, None, e.value) for i, e in enumerate(part)
        ]
        batch = changelog_batch(records)
        store.write(batch, records)
        ops, tables = (batch.rows.column(name).to_pylist() for name in ("op", "source_table"))
        row_events = Counter(t for op, t in zip(ops, tables, strict=True) if op in ("INSERT", "UPDATE", "DELETE"))
        written[DeltaTable(str(path)).version()] = row_events
    return DeltaTable(str(path)), written


def _shape(batch: Batch) -> dict[str, tuple[list[str], list[int | None]]]:
    return {table: rows.summary() for table, rows in sorted(batch.rows.items())}


def test_overlapping_reads_read_each_version_once_and_equal_read_range(tmp_path: Path) -> None:
    path = tmp_path / "changelog"
    changelog, written = _changelog(path, 12, seed=11)
    first_data = min(written)
    # A version without rows (a property set): kept like any other, so the run of versions has no hole.
    DeltaTable(str(path)).alter.set_table_properties({"binlake.test": "1"}, raise_if_not_exists=False)
    changelog = DeltaTable(str(path))
    last = changelog.version()
    tail = follower.TailBodies()
    # A mirror that moves on while the changelog grows: windows that overlap, one that jumps past what was
    # kept, one that starts before it (nothing kept can be used), and the full range again.
    windows = [(first_data, first_data + 4), (first_data + 2, first_data + 7), (first_data + 3, last)]
    windows += [(last - 1, last), (first_data, last), (first_data + 5, last)]
    reads = [tail.versions_read]
    for first, end in windows:
        found = tail.read(changelog, first, end)
        assert _shape(found) == _shape(follower.read_range(changelog, first, end)), (first, end)
        events = sum(len(rows) for rows in found.rows.values())
        assert events == sum(sum(c.values()) for v, c in written.items() if first <= v <= end), (first, end)
        reads.append(tail.versions_read)
    read_each = [b - a for a, b in itertools.pairwise(reads)]
    # 5 new; 3 past the kept ones; the rest to ``last``; a window inside what was kept; from before it: all of
    # them; inside again.
    assert read_each == [5, 3, last - first_data - 7, 0, last - first_data + 1, 0], read_each

    only = {sorted(written[first_data])[0]}
    found = tail.read(changelog, first_data + 5, last, only=only)  # another ``only``: read again, just those
    assert set(found.rows) == only
    assert _shape(found) == _shape(follower.read_range(changelog, first_data + 5, last, only=only))
    assert tail.versions_read - reads[-1] == last - first_data - 4


def test_another_changelog_at_the_path_is_read_whole(tmp_path: Path) -> None:
    """An operator removes the changelog and the sink starts a new one at the same path: versions of the same
    numbers hold other events, and nothing kept of the old table is used."""
    path = tmp_path / "changelog"
    old, _ = _changelog(path, 4, seed=1)
    tail = follower.TailBodies()
    tail.read(old, 1, old.version())
    shutil.rmtree(path)
    new, written = _changelog(path, 4, seed=2)
    found = tail.read(new, 1, new.version())
    assert _shape(found) == _shape(follower.read_range(new, 1, new.version()))
    assert {t: len(r) for t, r in found.rows.items()} == dict(sum(written.values(), Counter()))


def test_a_range_from_the_first_version_is_read_from_the_table(tmp_path: Path) -> None:
    """A range from version 0 reads the table as of its last version (as ``read_range`` does), keeping nothing."""
    changelog, written = _changelog(tmp_path / "changelog", 3, seed=3)
    tail = follower.TailBodies()
    found = tail.read(changelog, 0, changelog.version())
    assert tail.versions_read == 0
    assert {t: len(r) for t, r in found.rows.items()} == dict(sum(written.values(), Counter()))
