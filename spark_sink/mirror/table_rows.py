"""A batch's changelog rows per table, for the mirror without Spark and the current-state read: read natively
where the fast lane is built, else in Python, and what either makes of a table (pure, no I/O).

``read`` gives a ``Batch``: per table its row events (``TableRows``), the control events and each table's
descriptors. A table's rows make its fold per key (``TableRows.fold``: ``merge_source.FoldedTable``) or, for a
key-less table, its new rows (``TableRows.keyless``: ``merge_source.KeylessRows``).

Two implementations, one answer (``tests/sink/test_tail_native_unit.py`` checks them against each other):

- ``PythonRows``: the events as ``image_events`` reads them (a Python tuple and dict per event) folded by
  ``fold_rows``: five to seven times the native cost (docs/spark-sink.md has today's numbers);
- ``NativeRows``: the batch read by the fast lane (``tail_read.rs``) without a Python object per event and
  folded there (``tail_fold.rs``), values converted once they win, by the Rust twin of ``image_values``.
  What it cannot decide as Python would (a batch of another schema version or with a body the native
  reader declines, a key of a floating type, a key's text only Python's parsers read) goes to Python: the
  batch, or that table.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Protocol

from binlake.shared.codec import avro
from binlake.shared.event.model import ROW_OPS
from binlake.spark_sink.changelog import native_envelope
from binlake.spark_sink.events.order import SEPARATOR
from binlake.spark_sink.mirror import image_events
from binlake.spark_sink.mirror.control_events import ControlRow
from binlake.spark_sink.mirror.fold_rows import Projection, keyless_rows
from binlake.spark_sink.mirror.image_events import Descriptors, RowEvent
from binlake.spark_sink.mirror.image_values import target
from binlake.spark_sink.mirror.merge_source import FoldColumns, FoldedTable, KeylessRows, fold_table
from binlake.spark_sink.mirror.plan import Descriptor, Plan

log = logging.getLogger(__name__)


class TableRows(Protocol):
    """One table's row events of a batch, in changelog order."""

    def __len__(self) -> int: ...

    def summary(self) -> tuple[list[str], list[int | None]]:
        """The events' ops and ``ts_ms`` (the batch's statistics)."""
        ...

    def fold(self, table: str, plan: Plan, key: list[str], *, truncated_at: str | None) -> FoldedTable:
        """The events folded per key over the mirror's ``plan`` (``fold_rows.fold``)."""
        ...

    def keyless(self, projection: Projection, *, truncated_at: str | None) -> KeylessRows:
        """The events as a key-less mirror's new rows, one per origin (``fold_rows.keyless_rows``)."""
        ...


@dataclass(slots=True)
class Batch:
    """A batch's row events per table, control events (in sequence order) and each table's descriptors in the
    order their first events come (``image_events.Events``' meaning)."""

    rows: dict[str, TableRows]
    control: list[ControlRow]
    descriptors: dict[str, list[Descriptor]]


class PythonRows:
    """A table's events as ``image_events`` reads them, folded by ``fold_rows``."""

    def __init__(self, events: list[RowEvent]) -> None:
        self.events = events

    def __len__(self) -> int:
        return len(self.events)

    def summary(self) -> tuple[list[str], list[int | None]]:
        return [e.op for e in self.events], [e.ts_ms for e in self.events]

    def fold(self, table: str, plan: Plan, key: list[str], *, truncated_at: str | None) -> FoldedTable:
        return fold_table(table, self.events, plan, key, truncated_at=truncated_at)

    def keyless(self, projection: Projection, *, truncated_at: str | None) -> KeylessRows:
        made = keyless_rows(self.events, projection, truncated_at=truncated_at)
        return KeylessRows.of(made, len(projection.physical))


class NativeRows:
    """A table's events in a batch the fast lane read (``tail_fold.rs``)."""

    def __init__(self, tail: Any, table: str, count: int, descriptors: list[Descriptor], used: set[int]) -> None:
        self._tail = tail
        self._table = table
        self._count = count
        self._descriptors = descriptors
        """Per raw descriptor of the batch (``Tail.descriptors``' order), its descriptor."""
        self._used = used
        """The raw descriptors of this table's events."""

    def __len__(self) -> int:
        return self._count

    def summary(self) -> tuple[list[str], list[int | None]]:
        ops, ts = self._tail.summary(self._table)
        return list(ops), list(ts)

    def _routes(self, projection: Projection) -> list[list[tuple[str, int, bool]] | None]:
        return [
            [(logical, i, convert is not None) for i, logical, convert in projection.route(d).columns]
            if raw in self._used
            else None
            for raw, d in enumerate(self._descriptors)
        ]

    def python(self) -> PythonRows:
        """The same events read by Python (for what the native fold leaves to it)."""
        bodies, raws = self._tail.bodies(self._table)
        events = image_events.events([self._table] * len(bodies), bodies).rows.get(self._table, [])
        for event, raw in zip(events, raws, strict=True):
            event.descriptor = self._descriptors[raw]  # the batch's descriptors: the plan's routes name them
        return PythonRows(events)

    def fold(self, table: str, plan: Plan, key: list[str], *, truncated_at: str | None) -> FoldedTable:
        projection = Projection(plan, key)
        found = self._tail.fold(
            self._table,
            self._routes(projection),
            [target(t) for t in projection.types],
            projection.converters,
            projection.key_index,
            key,
            truncated_at,
        )
        if found is None:
            log.debug("%s: folded in Python (a key the native fold leaves to it)", table)
            return self.python().fold(table, plan, key, truncated_at=truncated_at)
        keys, known, seq, delete, last_delete, texts = found
        return FoldedTable.of(table, projection, FoldColumns(keys, list(known), seq, delete, last_delete), texts)

    def keyless(self, projection: Projection, *, truncated_at: str | None) -> KeylessRows:
        found = self._tail.keyless(
            self._table,
            self._routes(projection),
            [target(t) for t in projection.types],
            projection.converters,
            truncated_at,
        )
        if found is None:
            return self.python().keyless(projection, truncated_at=truncated_at)
        values, seq, op, origin = found
        return KeylessRows(list(values), seq, op, origin)


def read(tables: Sequence[str], bodies: Sequence[bytes], *, native: bool = True) -> Batch:
    """The batch of changelog rows (``source_table``, ``event_avro``) in changelog order (``native`` False:
    read by Python, for tests)."""
    reader = _native_reader() if native else None
    tail = None if reader is None else reader.read(list(tables), list(bodies))
    if tail is None:
        events = image_events.events(tables, bodies, native=native)
        rows: dict[str, TableRows] = {t: PythonRows(e) for t, e in events.rows.items()}
        return Batch(rows, events.control, events.descriptors)
    interned = Descriptors()
    descriptors = [interned.of(columns, tuple(key)) for columns, key in tail.descriptors()]
    used: dict[str, set[int]] = {}
    first: dict[tuple[str, int], str] = {}
    for table, raw, seq in tail.firsts():
        used.setdefault(table, set()).add(raw)
        pair = (table, descriptors[raw].desc_id)
        if pair not in first or seq < first[pair]:
            first[pair] = seq
    by_id = {d.desc_id: d for d in descriptors}
    ordered: dict[str, list[Descriptor]] = {}
    for (table, desc_id), _ in sorted(first.items(), key=lambda item: (item[1], item[0][1])):
        ordered.setdefault(table, []).append(by_id[desc_id])
    control = [ControlRow(t, op, seq, ts, kind, sql) for t, op, seq, ts, sql, kind in tail.controls()]
    control.sort(key=lambda c: c.seq)
    native_rows: dict[str, TableRows] = {
        table: NativeRows(tail, table, count, descriptors, used.get(table, set())) for table, count in tail.row_counts()
    }
    return Batch(native_rows, control, ordered)


@cache
def _native_reader() -> Any:
    """The fast lane's reader of current-schema bodies (None without the fast lane)."""
    try:
        from binlake.shared.fastlane._native import TailReader
    except ImportError:
        return None
    schema = avro.schema_json()
    ops = schema["fields"][[f["name"] for f in schema["fields"]].index("op")]["type"]["symbols"]
    return TailReader(
        native_envelope.notation(schema, {}, tag=True),
        [f["name"] for f in schema["fields"]],
        list(image_events.value_kinds()),
        [(op, op in ROW_OPS) for op in ops],
        avro.MAGIC + avro.fingerprint(),
        SEPARATOR,
    )
