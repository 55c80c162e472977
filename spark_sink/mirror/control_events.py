"""TRUNCATE and DDL events, as the mirrors apply them.

A micro-batch's non-row events are few, so they are collected to the driver
(``batch_facts``) and turned into per-table instructions:

- ``TRUNCATE`` (and a DDL of kind ``TRUNCATE_TABLE`` or ``DROP_TABLE``) empties
  the table as of its sequence (``spark_sink.events.order``): mirror rows and tombstones older than it
  are deleted, current history versions are closed, and every row event not
  newer than it is ignored from then on (table property ``binlake.truncated_at``).
  A dropped table keeps its mirror (empty) so a re-created table continues it.
- ``ALTER TABLE ... ADD [COLUMN]`` adds the column to the mirror when the DDL
  arrives, typed from the statement (MySQL type names, ``shared.parsing.sqltypes``),
  before any row event carries it.
- Other DDL (RENAME, DROP COLUMN, indexes...) stays in the changelog only: after
  a RENAME the events arrive under the new name and fill a new mirror; a dropped
  column keeps its last values (see docs/spark-sink.md).

``added_columns`` and ``controls`` are pure (no Spark) and unit-tested.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, TypeAlias

from binlake.shared.parsing.sqltypes import sql_type
from binlake.spark_sink.layout import EMPTYING_DDL
from binlake.spark_sink.mirror.plan import ColumnDesc

_ALTER_HEAD: Final = re.compile(
    r"^\s*alter\s+(?:online\s+|ignore\s+)*table\s+(?:`[^`]+`|[^\s`(]+)(?:\s*\.\s*(?:`[^`]+`|[^\s`(]+))?\s+", re.I | re.S
)
_ADD: Final = re.compile(r"^add\s+(?:column\s+)?", re.I)
_NOT_COLUMN: Final = re.compile(
    r"^(?:index|key|unique|primary|constraint|fulltext|spatial|foreign|check|partition)\b", re.I
)
_NAME: Final = re.compile(r"^(?:`((?:[^`]|``)+)`|([A-Za-z0-9_$\u0080-\uffff]+))\s*", re.S)
_TYPE: Final = re.compile(
    r"^([A-Za-z][A-Za-z0-9_ ]*?)\s*(\(\s*[0-9 ,]*\))?((?:\s+(?:unsigned|signed|zerofill))*)(?=\s|,|\)|$)", re.I
)


Truncation: TypeAlias = tuple[str, int | None]
"""A TRUNCATE (or emptying DDL) as its sequence and ``ts_ms``."""


@dataclass(slots=True)
class TableControl:
    """What a micro-batch's TRUNCATE and DDL events ask of one table."""

    truncated_at: str | None = None
    """The largest sequence (``spark_sink.events.order``) of an emptying event in the batch."""
    truncated_ts_ms: int | None = None
    """That event's ``ts_ms`` (when history tables close their versions)."""
    truncations: list[Truncation] = field(default_factory=list)
    """Every emptying event of the batch as (sequence, ``ts_ms``), oldest first: a history table closes an
    event's version at the first of them after it."""
    added: list[ColumnDesc] = field(default_factory=list)
    """Columns added by ALTER TABLE ... ADD, in statement order."""


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses, quotes and backticks."""
    parts: list[str] = []
    depth, start, quote = 0, 0, ""
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "`'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _column(definition: str) -> ColumnDesc | None:
    name_match = _NAME.match(definition)
    if name_match is None:
        return None
    name = name_match.group(1).replace("``", "`") if name_match.group(1) is not None else name_match.group(2)
    type_match = _TYPE.match(definition[name_match.end() :])
    if type_match is None:
        return None
    # The lazy type word stops before NOT NULL, DEFAULT, COMMENT...: one word is every MySQL type name
    # sqltypes needs (DOUBLE PRECISION reads as DOUBLE).
    word, params, modifiers = (part or "" for part in type_match.groups())
    described = sql_type(f"{word.split()[0]}{params}{modifiers}")
    if described.logical == "unknown":
        return None
    return ColumnDesc(name, described.logical, described.precision, described.scale)


def added_columns(sql: str) -> list[ColumnDesc]:
    """The columns an ``ALTER TABLE ... ADD [COLUMN] ...`` statement adds (MySQL syntax), typed; else []."""
    head = _ALTER_HEAD.match(sql)
    if head is None:
        return []
    out: list[ColumnDesc] = []
    for clause in _split_top_level(sql[head.end() :].rstrip().rstrip(";")):
        add = _ADD.match(clause)
        if add is None:
            continue
        body = clause[add.end() :].strip()
        if _NOT_COLUMN.match(body):
            continue
        # ADD COLUMN (a INT, b TEXT) adds several.
        definitions = _split_top_level(body[1 : body.rfind(")")]) if body.startswith("(") else [body]
        for definition in definitions:
            column = _column(definition)
            if column is not None:
                out.append(column)
    return out


@dataclass(frozen=True, slots=True)
class ControlRow:
    """A TRUNCATE or DDL event: its table, op, sequence, ``ts_ms`` and DDL kind and statement."""

    table: str
    op: str
    seq: str
    ts_ms: int | None
    kind: str | None
    sql: str | None


def controls(rows: Iterable[ControlRow]) -> dict[str, TableControl]:
    """Per source table, what TRUNCATE and DDL events (in sequence order) ask of it."""
    out: dict[str, TableControl] = {}
    for row in rows:
        table = out.setdefault(row.table, TableControl())
        if row.op == "TRUNCATE" or row.kind in EMPTYING_DDL:
            table.truncations.append((row.seq, row.ts_ms))
            if table.truncated_at is None or row.seq > table.truncated_at:
                table.truncated_at = row.seq
                table.truncated_ts_ms = row.ts_ms
        elif row.kind == "ALTER_TABLE" and row.sql:
            table.added.extend(added_columns(row.sql))
    return out
