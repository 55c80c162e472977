"""What a parser knows besides the message bytes."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo

UTC = _dt.UTC


@dataclass(slots=True)
class ParseContext:
    """Kafka coordinates (or file and line, offline) plus per-run configuration.

    ``source_table`` is ``db.table`` for formats whose messages carry no table
    name (debezium-smt). ``source_timezone`` is the zone in which wall-clock
    TIMESTAMP strings are read (MySQL TIMESTAMP rendered without zone).
    ``options`` carries format-specific settings, e.g. the drs-avro schema.
    Parsers treat it as read-only and copy the coordinates they keep (it is
    not frozen because a frozen dataclass costs microseconds per message to
    build, and so that the runtime can move one context from record to record).
    """

    topic: str = ""
    partition: int = 0
    offset: int = 0
    source_table: str | None = None
    source_timezone: _dt.tzinfo = UTC
    options: dict[str, Any] = field(default_factory=dict)

    def at(self, topic: str, partition: int, offset: int) -> ParseContext:
        """The same configuration at other coordinates."""
        return ParseContext(topic, partition, offset, self.source_table, self.source_timezone, self.options)


def zone(name: str) -> _dt.tzinfo:
    """A tzinfo for an IANA name or ``UTC``; raises ValueError for unknown names."""
    if name.upper() in ("UTC", "Z"):
        return UTC
    try:
        return ZoneInfo(name)
    except (KeyError, ValueError) as exc:  # ZoneInfoNotFoundError is a KeyError
        raise ValueError(f"unknown time zone {name!r}; use an IANA name such as Asia/Shanghai") from exc
