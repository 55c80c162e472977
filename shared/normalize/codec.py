"""The seam: ``Codec``, what it returns (``Normalized``), and ``codec_for``, which builds it at start-up."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from binlake.shared.normalize.tables import TableFilter
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Heartbeat, Rejected

Rows = tuple[str, str, int | None, list[bytes]]
"""Records of one table, op and event time: ("database.table", op, event time in ms or None,
[record key, single-object Avro value, key, value, ...]), in the message's order."""

NO_HEARTBEATS: tuple[Heartbeat, ...] = ()


@dataclass(slots=True)
class Normalized:
    """What one accepted message becomes.

    ``rows``: its records, in order (most messages: one group). ``heartbeats`` and ``control`` (the kind
    of a message that carries no change: a transaction marker, a heartbeat) feed the metrics, as does
    ``filtered`` (table -> events the table rules dropped).
    """

    rows: list[Rows]
    heartbeats: Sequence[Heartbeat] = NO_HEARTBEATS
    control: str | None = None
    filtered: Sequence[tuple[str, int]] = ()

    @property
    def records(self) -> int:
        """How many records the message publishes."""
        return sum(len(values) for _, _, _, values in self.rows) // 2

    def pairs(self) -> list[tuple[bytes, bytes]]:
        """(key, value) of each record, in order."""
        return [(values[i], values[i + 1]) for _, _, _, values in self.rows for i in range(0, len(values), 2)]


class Codec(Protocol):
    """One vendor format's messages to unified-topic records; never raises, whatever the bytes."""

    format_id: str
    version: str
    """The parser version dead letters name (``binlake-parser-version``)."""

    def __call__(self, raw: bytes, topic: str, partition: int, offset: int) -> Normalized | Rejected: ...


def codec_for(
    format_id: str,
    ctx: ParseContext,
    *,
    topic_tables: Mapping[str, str] | None = None,
    tables: TableFilter | None = None,
) -> Codec:
    """The codec of ``format_id`` under these parse settings (raises ``ConfigError`` for an unknown id).

    ``ctx``: the zone and format options; ``topic_tables``: each topic's ``db.table`` for formats whose
    messages may name no table (other topics take ``ctx.source_table``); ``tables``: the table rules.
    """
    from binlake.shared.normalize.python_codec import PythonCodec

    return PythonCodec(format_id, ctx, topic_tables=topic_tables, tables=tables)
