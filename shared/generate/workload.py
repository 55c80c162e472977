"""A synthetic MySQL workload and its ground truth.

``Workload(seed, tables)`` plays inserts, updates and deletes over K tables whose
columns cover the common MySQL types (unsigned BIGINT up to 2**64-1,
DECIMAL(38,10), DOUBLE, VARCHAR with unicode, TEXT, DATETIME(6), TIMESTAMP, DATE,
TIME, BLOB with every byte value, JSON, TINYINT(1), NULLs). Each ``Change``
carries typed canonical values (shared.event.values), the MySQL position it
would have in a binlog, and a transaction id, so a vendor renderer
(shared.generate.render) can write it in any vendor format. ``truth()`` is the
final state of every table and every change in order: what a correct pipeline
must reproduce.

Deterministic: the same seed gives the same changes.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Literal

from shared.event.values import Image, SqlTime, Value, integer

UTC: Final = dt.UTC
START_MS: Final = 1_735_689_600_000  # 2025-01-01T00:00:00Z


@dataclass(frozen=True, slots=True)
class ColumnSpec:
    name: str
    mysql_type: str
    """The MySQL column type text, as Canal's mysqlType shows it."""
    jdbc: int
    """java.sql.Types code (Canal/DRS sqlType)."""
    nullable: bool = True


COLUMNS: Final[tuple[ColumnSpec, ...]] = (
    ColumnSpec("id", "bigint(20) unsigned", -5, nullable=False),
    ColumnSpec("qty", "int(11)", 4),
    ColumnSpec("price", "decimal(38,10)", 3),
    ColumnSpec("ratio", "double", 8),
    ColumnSpec("name", "varchar(64)", 12),
    ColumnSpec("note", "text", -1),
    ColumnSpec("created_at", "datetime(6)", 93),
    ColumnSpec("updated_at", "timestamp(3)", 93),
    ColumnSpec("birthday", "date", 91),
    ColumnSpec("alarm", "time", 92),
    ColumnSpec("payload", "blob", 2004),
    ColumnSpec("doc", "json", 12),
    ColumnSpec("active", "tinyint(1)", -6),
)
PRIMARY_KEY: Final = ["id"]

Op = Literal["INSERT", "UPDATE", "DELETE"]


@dataclass(slots=True)
class Change:
    """One row change as the source database made it."""

    op: Op
    database: str
    table: str
    before: Image | None
    after: Image | None
    ts_ms: int
    """Commit time at the source, ms (whole seconds, as binlog event times are)."""
    binlog_file: str
    binlog_pos: int
    sequence: int
    """1-based position of the change in the whole workload: a vendor sequence."""
    txid: int

    @property
    def key(self) -> Any:
        image = self.after if self.after is not None else self.before
        assert image is not None
        return image["id"]


@dataclass(slots=True)
class Workload:
    seed: int = 1
    tables: int = 3
    database: str = "shop"
    insert_share: float = 0.45
    delete_share: float = 0.15
    rng: random.Random = field(init=False)
    state: dict[str, dict[int, Image]] = field(init=False)
    changes: list[Change] = field(init=False)
    _next_id: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.state = {name: {} for name in self.table_names()}
        self.changes = []

    def table_names(self) -> list[str]:
        return [f"t{index:02d}" for index in range(self.tables)]

    # ------------------------------------------------------------ values

    def _key(self) -> int:
        self._next_id += 1
        # Spread keys over the whole unsigned BIGINT range, beyond int64 too.
        if self._next_id % 5 == 0:
            return integer(2**64 - self._next_id)
        return self._next_id

    def _row(self, key: int) -> Image:
        rng = self.rng
        nulls = rng.random() < 0.15

        def maybe(value: Value) -> Value:
            return None if nulls and rng.random() < 0.5 else value

        created = dt.datetime(2020, 1, 1) + dt.timedelta(
            seconds=rng.randrange(10**8), microseconds=rng.randrange(10**6)
        )
        updated = dt.datetime(2024, 6, 1, tzinfo=UTC) + dt.timedelta(
            seconds=rng.randrange(10**7), milliseconds=rng.randrange(1000)
        )
        return {
            "id": key,
            "qty": maybe(rng.randrange(-(2**31), 2**31)),
            "price": maybe(Decimal(f"{rng.randrange(-(10**38) + 1, 10**38)}E-10")),  # exact: no context rounding
            "ratio": maybe(rng.choice([0.0, -1.5, 1e-300, 3.141592653589793, rng.random() * 1e6])),
            "name": maybe(rng.choice(["alice", "bob", "Zoë", "王小明", "emoji 🎉", 'quote " and \\ back', ""])),
            "note": maybe("note " * rng.randrange(0, 20)),
            "created_at": maybe(created),
            "updated_at": maybe(updated),
            "birthday": maybe(dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(30000))),
            "alarm": maybe(SqlTime(rng.randrange(-838, 839) * 3_600_000_000 + rng.randrange(3_600) * 1_000_000)),
            "payload": maybe(bytes(rng.randrange(256) for _ in range(rng.randrange(0, 24)))),
            "doc": maybe(f'{{"k": {rng.randrange(100)}, "tags": ["a", "b"]}}'),
            "active": maybe(rng.randrange(2)),
        }

    # ------------------------------------------------------------ changes

    def _emit(self, op: Op, table: str, before: Image | None, after: Image | None) -> Change:
        sequence = len(self.changes) + 1
        change = Change(
            op=op,
            database=self.database,
            table=table,
            before=before,
            after=after,
            ts_ms=START_MS + (sequence // 3) * 1000,
            binlog_file=f"mysql-bin.{1 + sequence // 5000:06d}",
            binlog_pos=4 + (sequence % 5000) * 200,
            sequence=sequence,
            txid=1000 + sequence,
        )
        self.changes.append(change)
        return change

    def step(self) -> Change:
        """Make one more change and return it."""
        rng = self.rng
        table = rng.choice(self.table_names())
        rows = self.state[table]
        roll = rng.random()
        if not rows or roll < self.insert_share:
            key = self._key()
            row = self._row(key)
            rows[key] = row
            return self._emit("INSERT", table, None, dict(row))
        key = rng.choice(list(rows))
        before = rows[key]
        if roll < self.insert_share + self.delete_share:
            del rows[key]
            return self._emit("DELETE", table, dict(before), None)
        fresh = self._row(key)
        changed = rng.sample([c.name for c in COLUMNS if c.name != "id"], rng.randrange(1, 4))
        after = dict(before)
        for name in changed:
            after[name] = fresh[name]
        rows[key] = after
        return self._emit("UPDATE", table, dict(before), dict(after))

    def run(self, events: int) -> Iterator[Change]:
        for _ in range(events):
            yield self.step()

    def truth(self) -> dict[str, Any]:
        """Final table states and the ordered change list, in the JSON view's value renderings."""
        from shared.generate.truth import render_truth

        return render_truth(self)
