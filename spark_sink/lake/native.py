"""Reading the sink's lake without Spark: ``binlake lake show`` and ``make demo`` answer in about a second.

Two native readers, each for what it does well:

- the ``deltalake`` package (delta-rs) reads each table's transaction log:
  version, last commit time, table properties, schema, and the row count
  from the log's per-file statistics (no data file is opened);
- DuckDB with its ``delta`` extension (the ``duckdb-ext-delta`` package, the
  extension binary DuckDB would otherwise download, so nothing is fetched at
  run time) scans data: the changelog's counts per source table and op, a
  mirror's newest ``_binlake_order_key``, its rows. delta-rs 1.6 refuses to
  scan tables with Delta's ``typeWidening`` reader feature, which every mirror
  has (``delta.enableTypeWidening``); DuckDB's extension (delta-kernel) reads
  them, widened columns included.

Only a lake on this machine's file system (a path or a ``file:`` URI) is read
natively: DuckDB reads object stores only through extensions the project does
not ship. ``binlake lake verify`` (Spark) reads any lake.

The names it reads by (folders, table properties, hidden columns) are the lake's
contract, ``spark_sink.layout``, which the sink writes by.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from binlake.shared.event.model import OPS, ROW_OPS
from binlake.spark_sink.lake import entries
from binlake.spark_sink.lake.entries import SourceTableDirs, TableInfo
from binlake.spark_sink.lake.errors import LakeError
from binlake.spark_sink.layout import (
    COMMITTED_LOG_FILE,
    DELETED_KEYS_DIR,
    DELTA_LOG,
    IS_CURRENT,
    KINDS,
    ORDER_KEY,
    TOMBSTONE_TABLE,
)
from binlake.spark_sink.local_files import local_root
from binlake.spark_sink.settings import SinkSettings


@dataclass(slots=True)
class SourceStats:
    """One source table's events in the changelog."""

    source_table: str
    events: int = 0
    ops: dict[str, int] = field(default_factory=dict)
    last_ts_ms: int | None = None
    last_order_key: str | None = None
    """The newest ``order_key`` of its row events (INSERT, UPDATE, DELETE, SNAPSHOT, UPSERT)."""


def sql_text(text: str) -> str:
    """``text`` as a DuckDB string literal."""
    return "'" + text.replace("'", "''") + "'"


def duckdb_extensions() -> str:
    """The folder holding the ``delta`` extension the ``duckdb-ext-delta`` package installed."""
    spec = importlib.util.find_spec("duckdb_ext")  # a namespace package of data: found, not imported
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    if not folders:
        raise LakeError("the duckdb-ext-delta package is missing: reinstall binlake (make install)")
    return str(Path(folders[0]) / "extensions")


def duckdb_connection() -> Any:
    """A new in-memory DuckDB connection with the ``delta`` extension loaded (from its package: nothing is
    downloaded)."""
    import duckdb

    config: dict[str, str | bool | int | float | list[str]] = {
        "extension_directory": duckdb_extensions(),
        "autoinstall_known_extensions": False,  # never download: the extension ships as a package
        "threads": max(1, min(4, os.cpu_count() or 1)),
    }
    connection = duckdb.connect(config=config)
    connection.execute("LOAD delta")
    return connection


class LakeReader:
    """One local lake, read natively; cheap to make, DuckDB started on the first scan."""

    def __init__(self, settings: SinkSettings) -> None:
        root = local_root(settings.lake())
        if root is None:
            raise LakeError(
                f"{settings.lake()} is not on this machine's file system: binlake lake show reads a local lake "
                "(a path or file:// URI); binlake lake verify reads any lake"
            )
        self.settings = settings
        self.root = root
        self._duck: Any = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------ locations

    def path(self, *parts: str) -> Path:
        return self.root.joinpath(*parts)

    def changelog(self) -> Path:
        return self.path("changelog")

    def quarantine(self) -> Path:
        return self.path("quarantine")

    def deleted_keys(self) -> Path:
        return self.path(DELETED_KEYS_DIR)

    def exists(self) -> bool:
        return self.root.is_dir() and any(child.is_dir() for child in self.root.iterdir())

    @staticmethod
    def is_table(path: Path | str) -> bool:
        """A Delta table: its log holds a commit or a checkpoint (a creation killed before its first commit
        leaves a log folder without either, which Delta readers refuse)."""
        log = Path(path, DELTA_LOG)
        return log.is_dir() and any(re.match(COMMITTED_LOG_FILE, child.name) for child in log.iterdir())

    def source_tables(self) -> list[SourceTableDirs]:
        """Every source table that has a mirror, tombstones or history table, sorted by name."""
        found = [
            (kind, child.name, str(child))
            for kind, folder in KINDS
            if self.path(folder).is_dir()
            for child in sorted(self.path(folder).iterdir())
            if self.is_table(child)  # not a folder Delta never committed to (or foreign files)
        ]
        return entries.group(found, self.properties)

    def find_source_table(self, table: str) -> SourceTableDirs | None:
        """The tables of source table ``table`` (by property, else by directory name), or None."""
        return entries.find(self.source_tables(), table)

    # ------------------------------------------------------------ the transaction log (delta-rs)

    @staticmethod
    def _delta(path: Path | str) -> Any:
        from deltalake import DeltaTable

        return DeltaTable(str(path))

    def properties(self, path: Path | str) -> dict[str, str]:
        configuration: dict[str, str] = self._delta(path).metadata().configuration
        return dict(configuration)

    def info(self, name: str, kind: str, path: Path | str) -> TableInfo | None:
        """Version, rows, last commit and properties of the Delta table at ``path``; None if there is none."""
        if not self.is_table(path):
            return None
        table = self._delta(path)
        history = table.history(1)
        ms = history[0].get("timestamp") if history else None
        committed = None if ms is None else datetime.fromtimestamp(ms / 1000, UTC)
        return TableInfo(
            name, kind, str(path), table.version(), self._rows(table, path), committed, self.properties(path)
        )

    def _rows(self, table: Any, path: Path | str) -> int:
        """Rows from the log's file statistics; a scan only when a file lacks them or rows are deleted by vector."""
        counts = table.get_add_actions(flatten=True).column("num_records").to_pylist()
        features = table.protocol().reader_features or []
        if None in counts or "deletionVectors" in features:
            return int(self.scalar(f"SELECT count(*) FROM {self.scan(path)}") or 0)
        return int(sum(counts))

    def schema(self, path: Path | str) -> list[tuple[str, str]]:
        """(column, Delta type) of the table, in table order."""
        fields = json.loads(self._delta(path).schema().to_json())["fields"]
        return [(f["name"], _type_text(f["type"])) for f in fields]

    # ------------------------------------------------------------ data (DuckDB's delta extension)

    def _connection(self) -> Any:
        with self._lock:
            if self._duck is None:
                self._duck = duckdb_connection()
            return self._duck

    def scan(self, path: Path | str) -> str:
        """The SQL table expression reading the Delta table at ``path``."""
        return f"delta_scan({sql_text(str(path))})"

    def query(self, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Column names and rows of a DuckDB query (Python values: Decimal, datetime, bytes...)."""
        connection = self._connection()
        with self._lock:
            cursor = connection.cursor()  # one cursor per query: the connection is shared between threads
        try:
            cursor.execute("SET enable_progress_bar = false")  # a long scan would draw one on the terminal
            cursor.execute(sql)
            names = [d[0] for d in cursor.description]
            return names, cursor.fetchall()
        finally:
            cursor.close()

    def scalar(self, sql: str) -> Any:
        _, rows = self.query(sql)
        return rows[0][0] if rows else None

    def changelog_stats(self, table: str | None = None) -> dict[str, SourceStats]:
        """Per source table: events, events per op, newest ``ts_ms`` and row-event ``order_key`` (one scan)."""
        if not self.is_table(self.changelog()):
            return {}
        where = "" if table is None else f" WHERE source_table = {sql_text(table)}"  # a partition column: pruned
        _, rows = self.query(
            "SELECT source_table, op, count(*), max(ts_ms), max(order_key) "
            f"FROM {self.scan(self.changelog())}{where} GROUP BY source_table, op"
        )
        out: dict[str, SourceStats] = {}
        for name, op, count, ts, order_key in rows:
            stats = out.setdefault(name, SourceStats(name))
            stats.events += int(count)
            stats.ops[op] = int(count)
            stats.last_ts_ms = _newest(stats.last_ts_ms, None if ts is None else int(ts))
            if op in ROW_OPS:
                stats.last_order_key = _newest(stats.last_order_key, order_key)
        for stats in out.values():
            stats.ops = {op: stats.ops[op] for op in (*OPS, *sorted(stats.ops)) if op in stats.ops}
        return dict(sorted(out.items()))

    def max_order_key(self, path: Path | str | None) -> str | None:
        """The largest ``_binlake_order_key`` of a mirror/tombstones table (None: absent, empty or no column)."""
        if path is None or not self.is_table(path):
            return None
        if ORDER_KEY not in {name for name, _ in self.schema(path)}:
            return None
        value = self.scalar(f"SELECT max({ORDER_KEY}) FROM {self.scan(path)}")
        return None if value is None else str(value)

    def deleted_keys_of(self, table: str) -> int:
        """How many tombstones the lake's tombstone table holds for ``table`` (a partition: pruned)."""
        if not self.is_table(self.deleted_keys()):
            return 0
        where = f"{TOMBSTONE_TABLE} = {sql_text(table)}"
        return int(self.scalar(f"SELECT count(*) FROM {self.scan(self.deleted_keys())} WHERE {where}") or 0)

    def history_current(self, path: Path | str) -> int | None:
        """Rows of a history table with ``is_current``; None when it has no such column."""
        if IS_CURRENT not in {name for name, _ in self.schema(path)}:
            return None
        return int(self.scalar(f"SELECT count(*) FROM {self.scan(path)} WHERE {IS_CURRENT}") or 0)

    def rows(self, path: Path | str) -> tuple[list[str], list[tuple[Any, ...]]]:
        """Every row of the table (for small tables: the demo compares mirrors with its ground truth)."""
        return self.query(f"SELECT * FROM {self.scan(path)}")

    def close(self) -> None:
        with self._lock:
            if self._duck is not None:
                self._duck.close()
                self._duck = None


_SPARK_NAMES: Final = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}
"""Delta's names of the integral types -> Spark's (``simpleString``), as the sink's docs and logs spell them."""


def _type_text(data_type: Any) -> str:
    """A Delta schema type (JSON) as text: ``decimal(20,0)``, ``timestamp_ntz``, ``struct<...>``."""
    if isinstance(data_type, str):
        return _SPARK_NAMES.get(data_type, data_type)
    kind = data_type.get("type")
    if kind == "array":
        return f"array<{_type_text(data_type['elementType'])}>"
    if kind == "map":
        return f"map<{_type_text(data_type['keyType'])},{_type_text(data_type['valueType'])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{_type_text(f['type'])}" for f in data_type["fields"]) + ">"
    return str(kind)


def _newest(a: Any, b: Any) -> Any:
    return b if a is None else a if b is None else max(a, b)
