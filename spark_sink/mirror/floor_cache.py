"""The tombstones' floors the mirror writer without Spark keeps from one batch to the next.

Every keyed table's batch needs the floor of each key it folds (its newest DELETE's sequence, from the
tombstone table). Read from the table, that is a scan and a GROUP BY of every key the table ever deleted,
in every batch: a cost that grows with the deletes, not with the batch. The writer is the tombstone table's
only writer (one per lake), so it keeps what it read and adds the keys each batch deletes once their commit
is made: the copy is valid for the version its own commits leave the table at. Any other version at the
start of a batch (an operator's change, a TRUNCATE's delete of older floors, a batch that failed before its
last commit) reads the floors from the table again, lazily, a source table at a time.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from deltalake import DeltaTable

from binlake.spark_sink.mirror.merge_source import floor_rows


@dataclass(slots=True)
class FloorCache:
    """Per source table, its deleted keys' floors (key text -> sequence) as the pinned tombstones hold them."""

    version: int | None = None
    """The tombstone table's version the floors are valid for (None: nothing held)."""
    tables: dict[str, dict[str, str]] = field(default_factory=dict)
    """The source tables read so far at ``version`` (a table not here is read on first use)."""
    _pinned: DeltaTable | None = None

    def pin(self, tombstones: DeltaTable | None) -> None:
        """Start a batch on ``tombstones`` as it is now (None: there is no tombstone table yet): the floors held
        stay only when they are of its version."""
        version = None if tombstones is None else tombstones.version()
        if version is None or version != self.version:
            self.tables.clear()
        self.version, self._pinned = version, tombstones

    def floors(self, table: str, keys: list[str]) -> list[str | None]:
        """The floor of each of ``keys`` of ``table`` (None: never deleted, as far as the pinned table knows)."""
        held = self.tables.get(table)
        if held is None:
            held = {}
            for batch in floor_rows(self._pinned, [table]).to_batches():
                held.update(zip(batch.column("k").to_pylist(), batch.column("f").to_pylist(), strict=True))
            self.tables[table] = held
        return [held.get(k) for k in keys]

    def committed(self, deleted: list[tuple[str, str, str]], *, commits: int, version: int) -> None:
        """The batch made ``commits`` commits to the tombstone table, the last at ``version``, appending
        ``deleted`` (source table, key text, sequence) and nothing else that changes a floor (a compaction keeps
        every floor): the floors held move on to ``version``, unless someone else committed meanwhile (the
        versions do not add up: everything is read again)."""
        expected = (-1 if self.version is None else self.version) + commits
        if version != expected:
            self.forget()
            return
        for table, key, floor in deleted:
            held = self.tables.get(table)
            if held is not None and floor > held.get(key, ""):
                held[key] = floor
        self.version = version

    def forget(self) -> None:
        """Read every floor from the table again at the next batch (its tombstones changed otherwise)."""
        self.tables.clear()
        self.version = None
