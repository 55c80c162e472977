"""The demo's traffic: per vendor format, generated changes, its schema changes, poison, and the ground truth.

Each format gets its own database (``canal_json``, ``oms_default``...) of
``tables`` tables and its own topic ``vendor.<format>``. The workload
(``shared.generate.workload``: inserts, updates and deletes over every common
MySQL type) is rendered in the format; a third of the way in, the first table
gets ``ALTER TABLE ... ADD COLUMN``, two thirds in the second table (the
first when there is one) a ``TRUNCATE`` (where the format carries them,
``controls``), and the workload
forgets that table's rows so later changes start it afresh, as the source
would. Poison messages (not JSON, cut short, invalid UTF-8, another format's
message) are mixed in: each must be dead-lettered, none may stop anything.

Positions. Row changes take the even slots of a position space and schema
changes the odd slot after the change they follow, so every message, row or
DDL, has its own binlog offset, vendor sequence and transaction id in stream
order; commit times (``ts_ms``) run up to the moment the traffic is made, so
the sink's freshness reads as seconds, not as the workload's fixed 2025 dates.
Messages are keyed by table (Canal's and OMS's "partition by table"): a
TRUNCATE lands in the partition of the rows it empties, which formats ordered
by Kafka position need (see each parser's "Order key").
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Final

from binlake.shared.cli.demo import controls
from binlake.shared.event.values import Image
from binlake.shared.generate import render
from binlake.shared.generate.workload import Change, Workload

POISON_JSON: Final = (b"this is not JSON at all", b'{"database": "cut short', b"\xff\xfe not UTF-8 \xc3\x28")
"""Poison every JSON format gets, plus one message of another format (``wrong_format``)."""
POISON_BINARY: Final = (b"\x00\x01 not Avro", b'{"json": "where Avro is expected"}', b"\x02" * 3)
SPAN_S: Final = 120
"""Commit times of a format's traffic spread over the SPAN_S seconds before it is made."""


@dataclass(slots=True)
class Traffic:
    """One format's messages and what the lake must hold once they are processed."""

    format_id: str
    topic: str
    database: str
    messages: list[tuple[bytes, bytes]] = field(default_factory=list)
    """(Kafka key, value) in produce order."""
    changes: int = 0
    controls: list[str] = field(default_factory=list)
    """What was sent besides row changes, e.g. ``ADD COLUMN canal_json.t00``."""
    poison: int = 0
    truth: dict[str, dict[int, Image]] = field(default_factory=dict)
    """Source table -> primary key -> the row's final values."""
    added_columns: dict[str, list[str]] = field(default_factory=dict)
    """Source table -> columns its ADD COLUMN added (NULL in every row)."""

    @property
    def events(self) -> int:
        """Canonical events the messages must become (one per change and per schema change)."""
        return self.changes + len(self.controls)


def formats() -> list[str]:
    """Every format the generator renders."""
    return sorted(render.RENDERERS)


def database_of(format_id: str) -> str:
    return format_id.replace("-", "_")


def topic_of(format_id: str) -> str:
    return f"vendor.{format_id}"


def _placed(change: Change, slot: int, slots: int, now_s: int) -> Change:
    """``change`` at position ``slot`` of ``slots``: its own offset, sequence, transaction and commit second."""
    seconds = now_s - SPAN_S + slot * SPAN_S // slots
    return dataclasses.replace(
        change,
        ts_ms=seconds * 1000,
        binlog_file=f"mysql-bin.{1 + slot // 10_000:06d}",
        binlog_pos=4 + (slot % 10_000) * 100,
        sequence=slot,
        txid=1000 + slot,
    )


def _poison(format_id: str) -> list[bytes]:
    if format_id in ("drs-avro", "oms-avro"):
        return list(POISON_BINARY)
    other = b'{"type": "insert", "database": "x", "table": "y", "ts": 1, "data": {"id": 1}}'  # Maxwell's shape
    if format_id == "maxwell-json":
        other = b'{"op_type": "I", "table": "x.y", "op_ts": "2025-01-01 00:00:00.000000", "after": {"id": 1}}'  # GG
    return [*POISON_JSON, other]


def build(format_id: str, *, changes: int, tables: int, seed: int, now_s: int | None = None) -> Traffic:
    """The traffic of one format (deterministic for a seed, but for the commit times)."""
    now_s = int(time.time()) if now_s is None else now_s
    database = database_of(format_id)
    workload = Workload(seed=seed, tables=tables, database=database)
    render_fn = render.get(format_id)
    ctx = render.RenderContext()
    traffic = Traffic(format_id, topic_of(format_id), database)
    names = workload.table_names()
    plan: dict[int, tuple[controls.Kind, str]] = {}
    plan[max(1, changes // 3)] = ("add_column", names[0])
    plan[max(2, 2 * changes // 3)] = ("truncate", names[min(1, len(names) - 1)])
    poison = _poison(format_id)
    poison_at = {max(1, changes * (i + 1) // (len(poison) + 1)): message for i, message in enumerate(poison)}
    slots = 2 * changes + 2
    for index in range(1, changes + 1):
        change = workload.step()
        key = f"{database}.{change.table}".encode()
        traffic.messages.append((key, render_fn(_placed(change, 2 * index, slots, now_s), ctx)))
        traffic.changes += 1
        if index in plan:
            kind, table = plan[index]
            at = _placed(dataclasses.replace(change, table=table), 2 * index + 1, slots, now_s)
            message = controls.render(format_id, kind, at)
            if message is not None:
                traffic.messages.append((f"{database}.{table}".encode(), message))
                name = f"{database}.{table}"
                if kind == "add_column":
                    traffic.controls.append(f"ADD COLUMN {name}")
                    traffic.added_columns.setdefault(name, []).append(controls.ADDED_COLUMN)
                else:
                    traffic.controls.append(f"TRUNCATE {name}")
                    workload.truncate(table)  # the source table is empty now
        if index in poison_at:
            traffic.messages.append((b"poison", poison_at[index]))
            traffic.poison += 1
    for table, rows in workload.state.items():
        traffic.truth[f"{database}.{table}"] = {int(key): dict(row) for key, row in rows.items()}
    return traffic


def parse_options(format_id: str) -> dict[str, Any]:
    """What a normalizer of ``format_id`` needs to read the rendered messages (e.g. the drs-avro schema)."""
    return render.parse_options(format_id)
