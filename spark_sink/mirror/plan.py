"""Which physical mirror column holds each described column of a micro-batch.

A mirror column's type comes from the events' column descriptors
(``typemap.spark_type``). A descriptor whose type the existing column holds
losslessly is cast into it; one that widens it (int -> bigint, decimal
precision) widens the column when type widening is on; any other type goes to
a fallback column ``<column>__<type>`` (``qty__string``), recorded in the table
property ``binlake.fallbacks`` so the sink knows which logical column it
belongs to. An event fills the physical column its descriptor routes to and
sets the column's other physical columns NULL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from pyspark.sql.types import DataType

from binlake.spark_sink.layout import HIDDEN
from binlake.spark_sink.mirror.typemap import fits, spark_type, type_suffix, widen
from binlake.spark_sink.settings import SinkSettings, for_table


@dataclass(frozen=True, slots=True)
class ColumnDesc:
    name: str
    logical_type: str
    precision: int | None
    scale: int | None


@dataclass(frozen=True, slots=True)
class Descriptor:
    """One distinct (columns, primary_key) of a table in a micro-batch."""

    desc_id: int
    columns: tuple[ColumnDesc, ...]
    primary_key: tuple[str, ...]


@dataclass(slots=True)
class Plan:
    types: dict[str, DataType]
    """Every physical column (hidden ones excluded) and its type after this batch."""
    logical: dict[str, str]
    """Physical column -> the logical (source) column it holds."""
    routes: dict[tuple[int, str], str | None] = field(default_factory=dict)
    """(descriptor id, logical column) -> physical column, None when the value cannot be stored (unknown type)."""
    added: list[str] = field(default_factory=list)
    widened: dict[str, DataType] = field(default_factory=dict)
    fallbacks: dict[str, str] = field(default_factory=dict)
    """Fallback physical column -> logical column (all of them, old and new)."""
    legacy_width: int = 0
    """The width of the mirror's rows that have none (``mirror_state.legacy_width``); set by ``schema``."""

    def physical_of(self, logical: str) -> list[str]:
        return [phys for phys, name in self.logical.items() if name == logical]


SHARED_NAME_HINT: Final = (
    'BINLAKE_SINK_TABLE_NAMES gives both the same name; give each source table a name of its own ("{table}" in '
    "a glob's name helps)"
)
"""What to do when two source tables would write one mirror."""


def one_table_per_mirror(settings: SinkSettings, tables: list[str]) -> None:
    """Refuse a batch in which two source tables would write one mirror (``BINLAKE_SINK_TABLE_NAMES``).

    A mirror written before names its source table (its writer refuses another one); two tables new in the
    same batch would both create it, and the second creation would find it there.
    """
    owners: dict[str, str] = {}
    for table in tables:
        owner = owners.setdefault(settings.mirror_uri(table), table)
        if owner != table:
            raise ValueError(
                f"source tables {owner} and {table} both map to the mirror {settings.mirror_uri(table)}: "
                f"{SHARED_NAME_HINT}"
            )


def choose_key(
    table: str, existing: list[str] | None, descriptors: list[Descriptor], overrides: dict[str, list[str]]
) -> list[str]:
    """The table's key: fixed at creation; else the events' key; else a configured one (exact name, then globs)."""
    if existing is not None:
        return existing
    for descriptor in descriptors:
        if descriptor.primary_key:
            return list(descriptor.primary_key)
    return list(for_table(overrides, table) or [])


def plan(
    existing: dict[str, DataType],
    fallbacks: dict[str, str],
    descriptors: list[Descriptor],
    *,
    widening: bool,
    no_widen: frozenset[str] = frozenset(),
) -> Plan:
    types = {name: t for name, t in existing.items() if name not in HIDDEN}
    logical = {name: fallbacks.get(name, name) for name in types}
    result = Plan(types=types, logical=logical, fallbacks=dict(fallbacks))
    for descriptor in descriptors:
        for column in descriptor.columns:
            wanted = spark_type(column.logical_type, column.precision, column.scale)
            name = column.name
            route: str | None
            if wanted is None:
                route = name if name in types else None
            elif name not in types:
                types[name] = wanted
                logical[name] = name
                result.added.append(name)
                route = name
            elif fits(wanted, types[name]):
                route = name
            elif widening and name not in no_widen and (wider := widen(types[name], wanted)) is not None:
                types[name] = wider
                if name not in result.added:
                    result.widened[name] = wider
                route = name
            else:
                route = f"{name}__{type_suffix(wanted)}"
                if route not in types:
                    types[route] = wanted
                    logical[route] = name
                    result.added.append(route)
                    result.fallbacks[route] = name
            result.routes[(descriptor.desc_id, name)] = route
    return result
