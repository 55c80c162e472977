"""Which changelog versions a mirror batch read in full, from its Delta source offsets (``mirror.batch_rows``)."""

from __future__ import annotations

from typing import Any

import pytest

from binlake.spark_sink.mirror.batch_rows import snapshot_version, whole_versions

pytestmark = pytest.mark.unit

RESERVOIR = "efdb2dd3-ec7e-4e94-a025-5f9fcb0cd976"


def offset(version: int, index: int = -1, *, starting: bool = False, reservoir: str = RESERVOIR) -> dict[str, Any]:
    """A Delta source offset as the offset log holds it."""
    return {
        "sourceVersion": 1,
        "reservoirId": reservoir,
        "reservoirVersion": version,
        "index": index,
        "isStartingVersion": starting,
    }


def test_a_batch_between_two_version_starts_reads_the_versions_between() -> None:
    assert whole_versions(offset(5), offset(7)) == (5, 6)
    assert whole_versions(offset(5), offset(6)) == (5, 5)


def test_a_batch_that_starts_or_ends_inside_a_version_is_not_whole_versions() -> None:
    assert whole_versions(offset(5, 3), offset(7)) is None  # began after file 3 of version 5
    assert whole_versions(offset(5), offset(7, 0)) is None  # ended inside version 7 (maxFilesPerTrigger)
    assert whole_versions(offset(5, starting=True), offset(7)) is None  # inside a snapshot


def test_offsets_that_do_not_say_are_not_whole_versions() -> None:
    assert whole_versions(None, offset(7)) is None
    assert whole_versions(offset(5), offset(5)) is None  # no version between
    assert whole_versions(offset(5), offset(7, reservoir="another")) is None  # another changelog
    assert whole_versions(offset(5), {"reservoirVersion": "7", "index": -1, "isStartingVersion": False}) is None
    assert whole_versions(offset(5), {"reservoirId": RESERVOIR, "reservoirVersion": 7}) is None


def test_a_first_batch_that_read_a_whole_snapshot_ended_at_the_next_version() -> None:
    assert snapshot_version(offset(5)) == 4
    assert snapshot_version(offset(5, 2)) is None  # stopped inside version 5
    assert snapshot_version(offset(5, starting=True)) is None  # stopped inside the snapshot
    assert snapshot_version(offset(0)) is None
    assert snapshot_version(None) is None
