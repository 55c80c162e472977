"""The floors the mirror writer without Spark keeps between batches (``mirror.floor_cache``), on real delta-rs
tombstone tables: kept while only the writer's own commits move the table, read again when anything else did."""

from __future__ import annotations

from pathlib import Path

import pytest
from arro3.core import Array, DataType, RecordBatch
from deltalake import DeltaTable, write_deltalake

from binlake.spark_sink.layout import ORDER_KEY, TOMBSTONE_KEY, TOMBSTONE_TABLE
from binlake.spark_sink.mirror.floor_cache import FloorCache

pytestmark = pytest.mark.unit


def _append(uri: str, rows: list[tuple[str, str, str]]) -> int:
    batch = RecordBatch.from_arrays(
        [Array([r[i] for r in rows], DataType.string()) for i in range(3)],
        names=[TOMBSTONE_TABLE, TOMBSTONE_KEY, ORDER_KEY],
    )
    write_deltalake(uri, batch, mode="append", partition_by=[TOMBSTONE_TABLE])
    return DeltaTable(uri).version()


def test_no_tombstone_table_then_the_writers_first_append(tmp_path: Path) -> None:
    uri = str(tmp_path / "deleted_keys")
    cache = FloorCache()
    cache.pin(None)
    assert cache.floors("db.a", ["1", "2"]) == [None, None]
    version = _append(uri, [("db.a", "1", "s5")])
    cache.committed([("db.a", "1", "s5")], commits=1, version=version)
    cache.pin(DeltaTable(uri))
    assert cache.version == 0 and cache.floors("db.a", ["1", "2"]) == ["s5", None]


def test_the_writers_own_commits_move_the_floors_on_without_a_read(tmp_path: Path) -> None:
    uri = str(tmp_path / "deleted_keys")
    _append(uri, [("db.a", "1", "s1"), ("db.b", "9", "s2")])
    cache = FloorCache()
    cache.pin(DeltaTable(uri))
    assert cache.floors("db.a", ["1", "2"]) == ["s1", None]
    version = _append(uri, [("db.a", "2", "s3"), ("db.a", "1", "s0")])  # an older delete keeps the newer floor
    cache.committed([("db.a", "2", "s3"), ("db.a", "1", "s0")], commits=1, version=version)
    held = cache.tables["db.a"]
    cache.pin(DeltaTable(uri))
    assert cache.tables.get("db.a") is held, "the floors are kept, not read again"
    assert cache.floors("db.a", ["1", "2"]) == ["s1", "s3"]
    assert cache.floors("db.b", ["9"]) == ["s2"]  # a table not read before is read at the kept version


def test_a_commit_by_someone_else_makes_the_floors_read_again(tmp_path: Path) -> None:
    uri = str(tmp_path / "deleted_keys")
    _append(uri, [("db.a", "1", "s1")])
    cache = FloorCache()
    cache.pin(DeltaTable(uri))
    assert cache.floors("db.a", ["1", "2"]) == ["s1", None]
    _append(uri, [("db.a", "2", "s7")])  # not the writer's: the cache does not know it
    cache.pin(DeltaTable(uri))
    assert cache.floors("db.a", ["1", "2"]) == ["s1", "s7"]


def test_versions_that_do_not_add_up_forget_the_floors(tmp_path: Path) -> None:
    uri = str(tmp_path / "deleted_keys")
    _append(uri, [("db.a", "1", "s1")])
    cache = FloorCache()
    cache.pin(DeltaTable(uri))
    cache.floors("db.a", ["1"])
    _append(uri, [("db.a", "3", "s8")])  # someone else, between the pin and the writer's own append
    version = _append(uri, [("db.a", "2", "s3")])
    cache.committed([("db.a", "2", "s3")], commits=1, version=version)
    assert cache.version is None and not cache.tables
    cache.pin(DeltaTable(uri))
    assert cache.floors("db.a", ["1", "2", "3"]) == ["s1", "s3", "s8"]
