"""The Python codec: the format's parser, the table rules, Avro encoding and record keys."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.event.model import ChangeEvent
from binlake.shared.normalize.codec import Normalized, Rows
from binlake.shared.normalize.tables import TableFilter
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import INTERNAL
from binlake.shared.parsing.result import Parsed, Rejected


def table_of(event: ChangeEvent) -> str:
    """The ``database.table`` name the table rules and the metrics use."""
    return f"{event.source.database or ''}.{event.source.table or ''}"


def records_of(events: list[ChangeEvent]) -> list[Rows]:
    """The unified topic's records of ``events``, grouped by table, op and event time (raises what the
    Avro encoder raises on an event it cannot encode)."""
    record = avro.encoder().record
    rows: list[Rows] = []
    last: tuple[str, str, int | None] | None = None
    values: list[bytes] = []
    for event in events:
        group = (table_of(event), event.op, event.ts_ms)
        if group != last:
            values = []
            rows.append((group[0], group[1], group[2], values))
            last = group
        values.extend(record(event))
    return rows


class PythonCodec:
    def __init__(
        self,
        format_id: str,
        ctx: ParseContext,
        *,
        topic_tables: Mapping[str, str] | None = None,
        tables: TableFilter | None = None,
    ) -> None:
        registry.spec(format_id).check_options(ctx.options)  # a bad option stops the start, not each message
        self.parser = registry.get(format_id)
        self._parse = self.parser.parse
        self.format_id = format_id
        self.version = self.parser.version
        self._base = ctx
        self._topic_tables = dict(topic_tables or {})
        self._tables = tables if tables is not None and tables.active else None
        self._contexts: dict[str, ParseContext] = {}

    def context(self, topic: str) -> ParseContext:
        """The topic's parse context (its ``source_table``), made once and moved from message to message:
        parsing is synchronous and parsers copy the coordinates they keep."""
        ctx = self._contexts.get(topic)
        if ctx is None:
            ctx = self._base.at(topic, 0, 0)
            ctx.source_table = self._topic_tables.get(topic, self._base.source_table)
            self._contexts[topic] = ctx
        return ctx

    def parse(self, raw: bytes, topic: str, partition: int, offset: int) -> Parsed | Rejected:
        """The parser's outcome for one message (never raises)."""
        ctx = self.context(topic)
        ctx.partition, ctx.offset = partition, offset
        return registry.run(self._parse, raw, ctx)  # what self.parser(raw, ctx) does, one call less

    def __call__(self, raw: bytes, topic: str, partition: int, offset: int) -> Normalized | Rejected:
        outcome = self.parse(raw, topic, partition, offset)
        if isinstance(outcome, Rejected):
            return outcome
        events = outcome.events
        filtered: list[tuple[str, int]] = []
        wanted = self._tables
        if wanted is not None:
            kept = []
            for event in events:  # the table rules, once per event, before the encoding
                if wanted(table := table_of(event)):
                    kept.append(event)
                else:
                    filtered.append((table, 1))
            events = kept
        try:
            rows = records_of(events)
        except (TypeError, ValueError, OverflowError) as exc:
            # The class only: an encoder's message may quote the value (personal data) into the letter.
            return Rejected(INTERNAL, f"event not encodable: {type(exc).__name__}")
        control = outcome.control if not outcome.events else None
        return Normalized(rows, outcome.heartbeats, control, filtered)
