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

``Workload(ties=True)`` (``binlake generate --ties``) plays the traffic that naive
order keys get wrong (issue 16): transactions of several changes of one table,
a multi-row statement (several rows, one op) followed by one or two more
changes of its last row (so a Canal flat message's row 2 is changed again in a
later message of the same batch), many transactions in one second (a row's
changes share an event time), and some transactions that started 1-3 seconds
before the previous one committed (event times that go back). The binlog
position and ``sequence`` still follow commit order, and ``truth()`` is still
the source's final state.

Deterministic: the same seed gives the same changes.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Literal

from binlake.shared.event.values import Image, SqlTime, Value, integer

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

LAST: Final = -1
"""In a transaction's plan: the row the transaction changed last."""


@dataclass(slots=True)
class Change:
    """One row change as the source database made it."""

    op: Op
    database: str
    table: str
    before: Image | None
    after: Image | None
    ts_ms: int
    """Event time at the source, ms (whole seconds, as binlog event times are). Without
    ``ties`` it grows with the sequence; with ``ties`` it is the transaction's start and
    can go back from one transaction to the next, as binlog event times do."""
    binlog_file: str
    binlog_pos: int
    sequence: int
    """1-based position of the change in the whole workload: a vendor sequence."""
    txid: int
    """The transaction's id: one per change without ``ties``, shared by a transaction's changes with."""

    @property
    def key(self) -> Any:
        image = self.after if self.after is not None else self.before
        assert image is not None
        return image["id"]


class InsertionOrder:
    """A table's live keys in insertion order, for ``rng.choice(list(rows))`` in O(log n), not O(n).

    ``Random.choice(seq)`` draws an index below ``len(seq)`` (as ``choice(range(len(seq)))`` does, without a
    copy); ``nth`` finds that live key of
    ``list(rows)`` (a dict keeps insertion order, an update leaves a key in place) with a Fenwick tree
    over insertion slots, so a long run draws exactly the keys it drew before, without copying every
    key per change (quadratic: a million changes took tens of minutes).
    """

    def __init__(self) -> None:
        self._keys: list[int] = []
        self._slot: dict[int, int] = {}
        self._tree: list[int] = [0]  # 1-based: _tree[i] counts the live slots in (i - lowbit(i), i]

    def _prefix(self, i: int) -> int:
        total = 0
        while i > 0:
            total += self._tree[i]
            i -= i & -i
        return total

    def add(self, key: int) -> None:
        self._keys.append(key)
        i = len(self._keys)
        self._slot[key] = i
        self._tree.append(1 + self._prefix(i - 1) - self._prefix(i - (i & -i)))

    def remove(self, key: int) -> None:
        i = self._slot.pop(key)
        while i < len(self._tree):
            self._tree[i] -= 1
            i += i & -i

    def nth(self, n: int) -> int:
        """The ``n``-th live key (0-based) in insertion order."""
        pos, step = 0, 1 << (len(self._tree) - 1).bit_length()
        while step:
            if pos + step < len(self._tree) and self._tree[pos + step] <= n:
                pos += step
                n -= self._tree[pos]
            step >>= 1
        return self._keys[pos]


@dataclass(slots=True)
class Workload:
    seed: int = 1
    tables: int = 3
    database: str = "shop"
    insert_share: float = 0.45
    delete_share: float = 0.15
    ties: bool = False
    """Play the traffic that ties and inverts naive order keys (module docstring)."""
    rng: random.Random = field(init=False)
    state: dict[str, dict[int, Image]] = field(init=False)
    changes: list[Change] = field(init=False)
    _next_id: int = field(init=False, default=0)
    _plan: list[tuple[Op, str, int | None]] = field(init=False, default_factory=list)
    """With ``ties``: the current transaction's remaining changes (op, table, key; None: a new row)."""
    _txid: int = field(init=False, default=1000)
    _tx_ts_ms: int = field(init=False, default=START_MS)
    _clock_ms: int = field(init=False, default=START_MS)
    _last_key: int = field(init=False, default=0)
    _order: dict[str, InsertionOrder] = field(init=False)

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)
        self.state = {name: {} for name in self.table_names()}
        self._order = {name: InsertionOrder() for name in self.table_names()}
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
            ts_ms=self._tx_ts_ms if self.ties else START_MS + (sequence // 3) * 1000,
            binlog_file=f"mysql-bin.{1 + sequence // 5000:06d}",
            binlog_pos=4 + (sequence % 5000) * 200,
            sequence=sequence,
            txid=self._txid if self.ties else 1000 + sequence,
        )
        self.changes.append(change)
        self._last_key = change.key
        return change

    def step(self) -> Change:
        """Make one more change and return it."""
        if not self.ties:
            return self._random_change()
        if not self._plan:
            self._begin_transaction()
        op, table, key = self._plan.pop(0)
        rows = self.state[table]
        if key == LAST:
            key = self._last_key
        if op == "INSERT":
            return self._insert(table)
        if key is None or key not in rows:
            return self._random_change()  # not planned: only a safety net
        if op == "DELETE":
            return self._delete(table, key)
        return self._update(table, key)

    def _begin_transaction(self) -> None:
        """Plan the next transaction of ``ties`` traffic and set its event time."""
        rng = self.rng
        self._txid += 1
        if rng.random() < 0.3:
            self._clock_ms += 1000  # else: one more transaction in the same second
        started_earlier = rng.random() < 0.2  # began before the previous one committed
        self._tx_ts_ms = self._clock_ms - (rng.randrange(1, 4) * 1000 if started_earlier else 0)
        table = rng.choice(self.table_names())
        rows = self.state[table]
        if rng.random() < 0.25:  # one ordinary change
            self._plan = [("INSERT", table, None) if not rows else self._any_change(table)]
            return
        plan: list[tuple[Op, str, int | None]]
        if len(rows) < 3 or rng.random() < 0.5:
            plan = [("INSERT", table, None)] * rng.randrange(2, 5)  # a multi-row INSERT
        else:
            plan = [("UPDATE", table, key) for key in rng.sample(list(rows), rng.randrange(2, 4))]
        # The statement's last row is changed again, in the same second, by later statements.
        plan += [("UPDATE", table, LAST)] * rng.randrange(1, 3)
        if rng.random() < 0.25:
            plan.append(("DELETE", table, LAST))
        self._plan = plan

    def _any_change(self, table: str) -> tuple[Op, str, int | None]:
        """An insert, update or delete of ``table`` in the usual shares."""
        roll = self.rng.random()
        if roll < self.insert_share:
            return ("INSERT", table, None)
        key = self._choice(table)
        return ("DELETE" if roll < self.insert_share + self.delete_share else "UPDATE", table, key)

    def _insert(self, table: str) -> Change:
        key = self._key()
        row = self._row(key)
        self.state[table][key] = row
        self._order[table].add(key)
        return self._emit("INSERT", table, None, dict(row))

    def truncate(self, table: str) -> None:
        """Empty ``table`` (a TRUNCATE): later changes insert into it anew."""
        self.state[table].clear()
        self._order[table] = InsertionOrder()

    def _delete(self, table: str, key: int) -> Change:
        before = self.state[table].pop(key)
        self._order[table].remove(key)
        return self._emit("DELETE", table, dict(before), None)

    def _choice(self, table: str) -> int:
        """``rng.choice(list(self.state[table]))``, drawing the same number, in O(log n)."""
        return self._order[table].nth(self.rng.choice(range(len(self.state[table]))))

    def _update(self, table: str, key: int) -> Change:
        rows = self.state[table]
        before = rows[key]
        fresh = self._row(key)
        changed = self.rng.sample([c.name for c in COLUMNS if c.name != "id"], self.rng.randrange(1, 4))
        after = dict(before)
        for name in changed:
            after[name] = fresh[name]
        rows[key] = after
        return self._emit("UPDATE", table, dict(before), dict(after))

    def _random_change(self) -> Change:
        rng = self.rng
        table = rng.choice(self.table_names())
        rows = self.state[table]
        roll = rng.random()
        if not rows or roll < self.insert_share:
            return self._insert(table)
        key = self._choice(table)
        if roll < self.insert_share + self.delete_share:
            return self._delete(table, key)
        return self._update(table, key)

    def run(self, events: int) -> Iterator[Change]:
        for _ in range(events):
            yield self.step()

    def truth(self) -> dict[str, Any]:
        """Final table states and the ordered change list, in the JSON view's value renderings."""
        from binlake.shared.generate.truth import render_truth

        return render_truth(self)
