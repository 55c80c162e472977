"""A streaming checkpoint's offset log, read by the sink: where each micro-batch starts and ends.

Structured Streaming writes a micro-batch's end offsets to ``<checkpoint>/offsets/<batch id>`` before
the batch runs (a write-ahead log): ``v1``, the batch's metadata as JSON, then one line per source, its
end offset as JSON. A batch reads from the previous batch's end offsets (exclusive) up to its own, and
a batch run again after a crash reads the same range, since both entries stay. So the two entries say
which records a batch holds without looking at them:

- the changelog query's Kafka source (``kafka_ranges``): ``{"<topic>": {"<partition>": <next offset>}}``;
  its first batch starts at the offsets the source resolved when the query was first started (earliest,
  latest or given), which it keeps in ``<checkpoint>/sources/0/0`` (``initial_kafka_offsets``);
- the mirror query's Delta source (``current_state.applied_by``): the changelog version and file index
  the batch read up to.

Spark keeps the newest entries (100 by default); an entry that is missing or unreadable is "not known",
and the caller finds out another way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class OffsetRange:
    """The Kafka offsets of one topic partition in a micro-batch: from ``first`` to ``last`` (inclusive;
    None: not known, as far as the partition goes)."""

    topic: str
    partition: int
    first: int
    last: int | None = None


def source_offset(text: str | None) -> Any:
    """The (only) source's end offset in an offset log entry, as parsed JSON; None if it does not say."""
    if text is None:
        return None
    lines = text.splitlines()
    if len(lines) != 3 or lines[0] != "v1":
        return None  # another log version, or several sources: not the sink's queries
    try:
        return json.loads(lines[2])
    except ValueError:
        return None


def kafka_offsets(entry: str | None) -> dict[tuple[str, int], int] | None:
    """The Kafka source's end offset per topic partition in an offset log entry; None if it does not say."""
    return _kafka_offsets(source_offset(entry))


def kafka_offset_json(text: str | None) -> dict[tuple[str, int], int] | None:
    """A Kafka source offset as a query's progress reports it (``{"<topic>": {"<partition>": <offset>}}``)
    per topic partition; None if it does not say."""
    if not text:
        return None
    try:
        return _kafka_offsets(json.loads(text))
    except ValueError:
        return None  # "None", or a source that does not report offsets as JSON


def initial_kafka_offsets(text: str | None) -> dict[tuple[str, int], int] | None:
    """Where the Kafka source started the query's first batch, from its ``sources/0/0`` file (a NUL byte
    Spark 2.1 needed, ``v1``, then the offsets as JSON); None if it does not say."""
    if text is None:
        return None
    lines = text.removeprefix("\x00").splitlines()
    if len(lines) != 2 or lines[0] != "v1":
        return None
    return kafka_offset_json(lines[1])


def _kafka_offsets(found: Any) -> dict[tuple[str, int], int] | None:
    if not isinstance(found, dict) or not found:
        return None
    out: dict[tuple[str, int], int] = {}
    for topic, partitions in found.items():
        if not isinstance(partitions, dict):
            return None
        for partition, offset in partitions.items():
            if not isinstance(offset, int) or offset < 0:
                return None  # a symbolic offset (-1 latest, -2 earliest) is not a position
            out[(str(topic), int(partition))] = offset
    return out


def kafka_ranges(
    start: dict[tuple[str, int], int] | None, end: dict[tuple[str, int], int] | None
) -> list[OffsetRange] | None:
    """The Kafka offsets a changelog batch reads, per topic partition that has any, from where it starts
    (the end offsets of the batch before it, or the initial offsets for batch 0) and its own end
    offsets; None when either is not known.

    A partition that ``start`` does not name was added since: Spark reads it from its beginning, so its
    range starts at 0 (a lower bound: an offset below the log's start holds no record).
    """
    if start is None or end is None:
        return None
    ranges: list[OffsetRange] = []
    for (topic, partition), stop in sorted(end.items()):
        first = start.get((topic, partition), 0)
        if stop < first:
            return None  # the offsets went back (a topic recreated): the records themselves must say
        if stop > first:
            ranges.append(OffsetRange(topic, partition, first, stop - 1))
    return ranges
