"""What the lake tools list: a Delta table's facts and the tables of one source table.

Two readers fill them: ``tables`` through Spark (``binlake lake verify``, which
compares with the topic through Spark anyway) and ``native`` through delta-rs
and DuckDB (``binlake lake show``, the demo: no JVM). Both walk the lake's
folders (``layout.KINDS``) and hand what they find to ``group``, so the two
agree on which folders are tables and which source table each belongs to.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from binlake.spark_sink.layout import PROP_FALLBACKS, PROP_KEY, PROP_SOURCE, table_dir


@dataclass(frozen=True, slots=True)
class TableInfo:
    """One Delta table of the lake as ``binlake lake show`` lists it."""

    name: str
    """``changelog``, ``quarantine``, or the source table a mirror/tombstones/history table belongs to."""
    kind: str
    uri: str
    version: int
    rows: int
    last_commit: datetime | None
    properties: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SourceTableDirs:
    """The per-source-table tables that share one directory name."""

    source_table: str
    dir: str
    mirror: str | None = None
    tombstones: str | None = None
    history: str | None = None

    def uri(self, kind: str) -> str | None:
        return {"mirror": self.mirror, "tombstones": self.tombstones, "history": self.history}[kind]


def group(
    found: Iterable[tuple[str, str, str]], properties: Callable[[str], Mapping[str, str]]
) -> list[SourceTableDirs]:
    """The source tables of the Delta tables ``found`` as (kind, directory name, uri), sorted by name.

    A source table is named by its tables' ``PROP_SOURCE`` property (the mirror's first; tombstones or
    history carry it too when alone), else by the directory name."""
    entries: dict[str, SourceTableDirs] = {}
    for kind, name, uri in found:
        setattr(entries.setdefault(name, SourceTableDirs(source_table=name, dir=name)), kind, uri)
    for entry in entries.values():
        for table_uri in (entry.mirror, entry.history, entry.tombstones):
            if table_uri is not None:
                named = properties(table_uri).get(PROP_SOURCE)
                if named:
                    entry.source_table = named
                    break
    return sorted(entries.values(), key=lambda e: e.source_table)


def find(entries: list[SourceTableDirs], table: str) -> SourceTableDirs | None:
    """The tables of source table ``table`` (by property, else by directory name), or None."""
    for entry in entries:
        if entry.source_table == table:
            return entry
    wanted = table_dir(table)
    return next((entry for entry in entries if entry.dir == wanted), None)


def primary_key(properties: Mapping[str, str]) -> list[str]:
    """A mirror's key columns, from its properties (``PROP_KEY``); [] for a key-less table."""
    key: list[str] = json.loads(properties.get(PROP_KEY, "[]"))
    return key


def fallbacks(properties: Mapping[str, str]) -> dict[str, str]:
    """A mirror's fallback columns (physical -> logical name), from its properties (``PROP_FALLBACKS``)."""
    value: dict[str, str] = json.loads(properties.get(PROP_FALLBACKS, "{}"))
    return value
