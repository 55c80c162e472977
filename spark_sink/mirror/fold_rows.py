"""One table's row events folded per key in Python: the mirror's rules without Spark (pure, no I/O).

The twin of ``merge.keyed_events`` + ``merge.fold_per_key`` (and ``merge.keyless_rows``): each event is
projected through its own descriptor onto the mirror's physical columns (``plan.Plan``): a column the
descriptor lists and the image holds is *known* (its value converted to the column's type when the
descriptor routes it there, NULL in the column's other physical columns); a column the image lacks is
unknown and leaves the mirror's value alone. An UPDATE that changes the key also deletes the old key
(from ``before``; only the key is known of that DELETE). Events whose key has a NULL are left out, as
Spark's fold leaves them out. Per key the fold keeps the newest sequence, whether the newest event
deletes, the newest DELETE's sequence, and per column the newest event that knows it (value and
sequence): what ``merge_rules`` needs to apply the batch above the key's floor.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql.types import DataType

from binlake.spark_sink.mirror.image_events import Image, RowEvent
from binlake.spark_sink.mirror.image_values import Convert, converter
from binlake.spark_sink.mirror.plan import Descriptor, Plan


@dataclass(slots=True)
class Folded:
    """What a batch knows of one key (``merge_rules``' ``s`` row)."""

    key: tuple[Any, ...]
    seq: str
    delete: bool
    last_delete: str | None
    known: dict[int, tuple[Any, str]] = field(default_factory=dict)
    """Physical column index -> (value, sequence) of the newest event knowing it (key columns excluded)."""


@dataclass(frozen=True, slots=True)
class _Route:
    """A descriptor's columns on the physical ones: (physical index, logical name, conversion or None: known
    here but routed to another physical column, so NULL)."""

    columns: tuple[tuple[int, str, Convert | None], ...]


class Projection:
    """A table's plan compiled for Python: per descriptor, which physical columns its events fill."""

    def __init__(self, plan: Plan, key: list[str]) -> None:
        self.physical = list(plan.types)
        self.types: list[DataType] = [plan.types[p] for p in self.physical]
        self.key_index = [self.physical.index(k) for k in key]
        self._plan = plan
        self.converters: list[Convert] = [converter(t) for t in self.types]
        self._routes: dict[int, _Route] = {}

    def route(self, descriptor: Descriptor) -> _Route:
        found = self._routes.get(descriptor.desc_id)
        if found is not None:
            return found
        plan = self._plan
        columns: list[tuple[int, str, Convert | None]] = []
        for i, phys in enumerate(self.physical):
            logical = plan.logical[phys]
            if not any(c.name == logical for c in descriptor.columns):
                continue
            routed = plan.routes.get((descriptor.desc_id, logical)) == phys
            columns.append((i, logical, self.converters[i] if routed else None))
        found = self._routes[descriptor.desc_id] = _Route(tuple(columns))
        return found

    def values(self, route: _Route, image: Image | None, only: list[int] | None = None) -> dict[int, Any]:
        """Physical column index -> value, for the columns the event knows (``only``: just those)."""
        if image is None:
            return {}
        out: dict[int, Any] = {}
        get = image.get  # an image's values are (branch, value) pairs, never None: None is "absent"
        for i, logical, convert in route.columns:
            if only is not None and i not in only:
                continue
            tagged = get(logical)
            if tagged is not None:
                out[i] = None if convert is None else convert(tagged)
        return out

    def key_of(self, image: Image | None, names: list[str]) -> tuple[Any, ...]:
        """The key's values in ``image`` converted to the key columns' types (None where it lacks one)."""
        if image is None:
            return tuple(None for _ in names)
        return tuple(self.converters[i](image.get(n)) for i, n in zip(self.key_index, names, strict=True))


def fold(
    events: Iterable[RowEvent], projection: Projection, key: list[str], *, truncated_at: str | None
) -> list[Folded]:
    """The batch's events of a keyed table folded per key (module doc), in no particular order."""
    found: dict[tuple[Any, ...], Folded] = {}
    key_index = projection.key_index
    keys = frozenset(key_index)
    for event in events:
        if truncated_at is not None and event.seq <= truncated_at:
            continue
        route = projection.route(event.descriptor)
        is_delete = event.op == "DELETE"
        image = event.before if is_delete else event.after
        if event.op == "UPDATE" and event.before is not None and event.after is not None:
            old = projection.key_of(event.before, key)
            if old != projection.key_of(event.after, key):
                moved = projection.values(route, event.before, only=key_index)
                _apply(found, key_index, keys, moved, event.seq, delete=True)
        _apply(found, key_index, keys, projection.values(route, image), event.seq, delete=is_delete)
    return list(found.values())


def _apply(
    found: dict[tuple[Any, ...], Folded],
    key_index: list[int],
    keys: frozenset[int],
    values: dict[int, Any],
    seq: str,
    *,
    delete: bool,
) -> None:
    key = tuple([values.get(i) for i in key_index])
    if None in key:
        return
    row = found.get(key)
    if row is None:
        row = found[key] = Folded(key, seq, delete, seq if delete else None)
    else:
        if seq > row.seq:
            row.seq, row.delete = seq, delete
        if delete and (row.last_delete is None or seq > row.last_delete):
            row.last_delete = seq
    known = row.known
    for i, value in values.items():
        if i in keys:
            continue
        held = known.get(i)
        if held is None or seq > held[1]:
            known[i] = (value, seq)


def keyless_rows(
    events: Iterable[RowEvent], projection: Projection, *, truncated_at: str | None
) -> list[tuple[list[Any], RowEvent]]:
    """A key-less table's events as mirror rows (columns an event does not know are NULL), one per origin."""
    seen: set[str] = set()
    out: list[tuple[list[Any], RowEvent]] = []
    width = len(projection.physical)
    for event in events:
        if (truncated_at is not None and event.seq <= truncated_at) or event.origin in seen:
            continue
        seen.add(event.origin)
        image = event.before if event.op == "DELETE" else event.after
        values = projection.values(projection.route(event.descriptor), image)
        out.append(([values.get(i) for i in range(width)], event))
    return out
