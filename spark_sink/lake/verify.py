"""``binlake lake verify``: the comparison of the lake with the unified topic, as pure Python.

``spark_sink.lake.facts`` reads the topic (batch, ``read_committed``) and the
lake and reduces both to a few numbers per source table (``TableFacts``); this
module compares those numbers and says, in plain words, what differs. It
imports no Spark, so every rule is unit-tested on hand-made facts.

The rules, per source table:

- **changelog events**: every decodable event of the topic is one changelog
  row: the changelog's distinct Kafka records (topic, partition, offset) must
  number the topic's events, none missing, none foreign;
- **duplicates**: no two changelog rows share a Kafka record, and no two
  events of the topic share an origin (the vendor message's topic, partition,
  offset and row: one vendor change published twice upstream of the sink);
- **last order_key**: the newest sequence (``order_key``, then origin, the
  sink's total order, ``spark_sink.events.order``) of the row events (INSERT,
  UPDATE, DELETE, SNAPSHOT, UPSERT) is the same in the topic and the changelog;
- **TRUNCATE** (also a DDL ``TRUNCATE_TABLE`` or ``DROP_TABLE``): when the
  mirror records the last one it applied (property ``binlake.truncated_at``),
  that is the topic's last one, and nothing older than it counts below;
- **keyed mirror**: its rows = the live keys of the topic (row events folded
  per key in sequence order: live unless the last is a DELETE; a
  key-changing UPDATE ends the old key); its newest ``_binlake_order_key`` =
  the newest last event of a live key, or, with a tombstones table (which
  keeps deleted keys), of any key; its history table's current rows = the
  live keys;
- **key-less (append-only) mirror**: its rows = the topic's row events
  (distinct origins: the sink appends a change once), its
  newest ``_binlake_order_key`` = the topic's;
- and once for the lake: the quarantine holds each undecodable topic record once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

QUARANTINE = "(quarantine)"

Value = int | str | None


@dataclass(frozen=True, slots=True)
class TopicTable:
    """One source table's decodable events in the topic."""

    events: int = 0
    duplicated_by_origin: int = 0
    """Events whose origin (vendor topic, partition, offset, row) an earlier event of the table already has:
    one vendor change published twice upstream of the sink."""
    row_events: int = 0
    """Row events, a change published twice counted once (a key-less mirror appends it once)."""
    last_order_key: str | None = None
    """Newest sequence (``order_key``, then origin: ``spark_sink.events.order``) of its row events."""
    truncates: int = 0
    """TRUNCATE events and DDL events of kind TRUNCATE_TABLE or DROP_TABLE (both empty the mirror)."""
    last_truncate: str | None = None
    row_events_after_truncate: int = 0
    """Row events newer than ``last_truncate`` (all of them when there is none)."""


@dataclass(frozen=True, slots=True)
class ChangelogTable:
    """One source table's rows in the changelog (rows read from the verified topic only)."""

    rows: int = 0
    records: int = 0
    """Distinct Kafka records (topic, partition, offset) among the rows."""
    missing: int = 0
    """Topic records of this table that no changelog row holds."""
    extra: int = 0
    """Changelog records (of this table) that are not an event of the topic."""
    last_order_key: str | None = None


@dataclass(frozen=True, slots=True)
class MirrorTable:
    """One mirror table (with its tombstones and history tables when the sink writes them)."""

    key: tuple[str, ...]
    """``binlake.primary_key``; empty: append-only."""
    rows: int
    last_order_key: str | None
    """Newest ``_binlake_order_key`` over the mirror and its tombstones."""
    tombstones: bool = False
    tracks_truncates: bool = False
    """The mirror has the property ``binlake.truncated_at``: this sink applies TRUNCATE."""
    truncated_at: str | None = None
    history_current: int | None = None
    """Current, not deleted rows of the history table; None without a history table."""


@dataclass(frozen=True, slots=True)
class ExpectedMirror:
    """A keyed mirror as the topic says it must be (its row events folded per key with the mirror's key)."""

    live_keys: int = 0
    last_live: str | None = None
    """Newest last-event ``order_key`` among live keys."""
    last_any: str | None = None
    """Newest last-event ``order_key`` among all keys, live or deleted (what mirror + tombstones hold)."""


@dataclass(frozen=True, slots=True)
class TableFacts:
    table: str
    topic: TopicTable = field(default_factory=TopicTable)
    changelog: ChangelogTable = field(default_factory=ChangelogTable)
    mirror: MirrorTable | None = None
    expected: ExpectedMirror | None = None
    """Set for keyed mirrors."""


@dataclass(frozen=True, slots=True)
class LakeFacts:
    topic: str
    tables: tuple[TableFacts, ...]
    undecodable: int = 0
    """Topic records that are not a readable event (they belong in the quarantine)."""
    quarantine_rows: int = 0
    quarantine_records: int = 0
    other_topics: dict[str, int] = field(default_factory=dict)
    """Changelog rows read from other topics: not compared."""
    topic_start: dict[int, int] = field(default_factory=dict)
    """Each topic partition's first offset (above 0: retention or compaction removed records)."""


@dataclass(frozen=True, slots=True)
class Difference:
    table: str
    what: str
    expected: Value
    found: Value
    detail: str = ""

    def text(self) -> str:
        line = f"{self.table}: {self.what}: expected {_show(self.expected)}, found {_show(self.found)}"
        return f"{line} ({self.detail})" if self.detail else line


@dataclass(frozen=True, slots=True)
class Verdict:
    topic: str
    tables: int
    events: int
    differences: list[Difference]
    notes: list[str]

    @property
    def matches(self) -> bool:
        return not self.differences

    def exit_code(self) -> int:
        return 0 if self.matches else 1


def _show(value: Value) -> str:
    return "none" if value is None else str(value)


def _check(out: list[Difference], table: str, what: str, expected: Value, found: Value) -> None:
    if expected != found:
        out.append(Difference(table, what, expected, found))


def compare_changelog(facts: TableFacts) -> list[Difference]:
    out: list[Difference] = []
    topic, log = facts.topic, facts.changelog
    if log.records != topic.events or log.missing or log.extra:
        parts = []
        if log.missing:
            parts.append(f"{log.missing} topic events missing from the changelog")
        if log.extra:
            parts.append(f"{log.extra} changelog rows are no event of the topic")
        out.append(Difference(facts.table, "changelog events", topic.events, log.records, "; ".join(parts)))
    _check(out, facts.table, "duplicate changelog rows (same Kafka record)", 0, log.rows - log.records)
    if topic.duplicated_by_origin:
        out.append(
            Difference(
                facts.table,
                "events duplicated by origin (one vendor change published twice upstream)",
                0,
                topic.duplicated_by_origin,
                "the sink de-duplicates by unified-topic record only; the normalizer's exactly-once delivery is "
                "what keeps vendor changes single (docs/exactly-once.md)",
            )
        )
    _check(out, facts.table, "last row-event order_key in the changelog", topic.last_order_key, log.last_order_key)
    return out


def compare_mirror(facts: TableFacts) -> tuple[list[Difference], list[str]]:
    out: list[Difference] = []
    notes: list[str] = []
    table, topic, mirror = facts.table, facts.topic, facts.mirror
    if mirror is None:
        if topic.row_events:
            out.append(Difference(table, "mirror table", "present", "missing", f"{topic.row_events} row events"))
        return out, notes
    if topic.truncates and not mirror.tracks_truncates:
        notes.append(
            f"{table}: the topic has {topic.truncates} TRUNCATE events but the mirror has no "
            "binlake.truncated_at (no TRUNCATE applied to it): the expected state ignores them too"
        )
    if mirror.tracks_truncates:
        _check(out, table, "last TRUNCATE applied to the mirror", topic.last_truncate, mirror.truncated_at or None)
    if not mirror.key:
        appended, newest = topic.row_events, topic.last_order_key
        if mirror.tracks_truncates and topic.last_truncate is not None:
            appended = topic.row_events_after_truncate
            if newest is not None and newest < topic.last_truncate:
                newest = None  # every row event is older than the TRUNCATE: the mirror is empty
        _check(out, table, "mirror rows (append-only: one per row event)", appended, mirror.rows)
        _check(out, table, "newest _binlake_order_key in the mirror", newest, mirror.last_order_key)
        return out, notes
    expected = facts.expected or ExpectedMirror()
    _check(out, table, "mirror rows (live keys in the topic)", expected.live_keys, mirror.rows)
    if mirror.tombstones:
        what, wanted = "newest _binlake_order_key in the mirror and its tombstones", expected.last_any
    else:
        what, wanted = "newest _binlake_order_key in the mirror (of a live key)", expected.last_live
    _check(out, table, what, wanted, mirror.last_order_key)
    if mirror.history_current is not None:
        _check(out, table, "current rows in the history table", expected.live_keys, mirror.history_current)
    return out, notes


def compare(facts: LakeFacts) -> Verdict:
    """Every difference between the lake and the topic, table by table (sorted), then the quarantine."""
    differences: list[Difference] = []
    notes: list[str] = []
    for table in sorted(facts.tables, key=lambda t: t.table):
        differences += compare_changelog(table)
        found, said = compare_mirror(table)
        differences += found
        notes += said
    if facts.quarantine_records != facts.undecodable:
        differences.append(
            Difference(
                QUARANTINE,
                "quarantined records (undecodable in the topic)",
                facts.undecodable,
                facts.quarantine_records,
            )
        )
    _check(
        differences,
        QUARANTINE,
        "duplicate quarantine rows (same Kafka record)",
        0,
        facts.quarantine_rows - facts.quarantine_records,
    )
    for other, rows in sorted(facts.other_topics.items()):
        notes.append(f"the changelog holds {rows} rows read from topic {other}: not compared (see --topic)")
    for partition, offset in sorted(facts.topic_start.items()):
        if offset > 0:
            notes.append(
                f"topic {facts.topic} partition {partition} starts at offset {offset}: older records are gone "
                "(retention or compaction), so the lake may hold events the topic no longer has"
            )
    events = sum(t.topic.events for t in facts.tables)
    if events == 0 and facts.undecodable == 0:
        notes.append(f"topic {facts.topic} holds no records")
    return Verdict(facts.topic, len(facts.tables), events, differences, notes)


def render_text(verdict: Verdict) -> str:
    lines = [f"note: {note}" for note in verdict.notes]
    if verdict.matches:
        lines.append(f"lake matches the topic: {verdict.tables} tables, {verdict.events} events")
    else:
        lines += [d.text() for d in verdict.differences]
        touched = len({d.table for d in verdict.differences})
        lines.append(
            f"lake differs from topic {verdict.topic}: {len(verdict.differences)} differences in {touched} "
            f"tables ({verdict.tables} tables, {verdict.events} events compared)"
        )
    return "\n".join(lines)


def render_json(verdict: Verdict, facts: LakeFacts) -> dict[str, Any]:
    return {
        "topic": verdict.topic,
        "matches": verdict.matches,
        "tables": verdict.tables,
        "events": verdict.events,
        "differences": [asdict(d) for d in verdict.differences],
        "notes": verdict.notes,
        "facts": {
            "undecodable": facts.undecodable,
            "quarantine_rows": facts.quarantine_rows,
            "quarantine_records": facts.quarantine_records,
            "other_topics": facts.other_topics,
            "topic_start": facts.topic_start,
            "tables": {t.table: asdict(t) for t in sorted(facts.tables, key=lambda t: t.table)},
        },
    }
