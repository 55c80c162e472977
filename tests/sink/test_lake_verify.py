"""``binlake lake verify``'s comparison rules on hand-made facts (no Spark), and the text helpers it prints with."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from binlake.shared.cli.main import main
from binlake.spark_sink.lake.text import duration, grid, to_json
from binlake.spark_sink.lake.verify import (
    QUARANTINE,
    ChangelogTable,
    Difference,
    ExpectedMirror,
    LakeFacts,
    MirrorTable,
    TableFacts,
    TopicTable,
    compare,
    render_json,
    render_text,
)

pytestmark = pytest.mark.unit

OK1, OK2, OK3 = (f"{n:020d}.{0:020d}.000000" for n in (1, 2, 3))


def keyed(**changes: Any) -> TableFacts:
    """shop.a: 5 events (4 row events), 3 live keys, the newest event a DELETE; lake in agreement."""
    facts = TableFacts(
        table="shop.a",
        topic=TopicTable(events=5, row_events=4, last_order_key=OK3, row_events_after_truncate=4),
        changelog=ChangelogTable(rows=5, records=5, last_order_key=OK3),
        mirror=MirrorTable(key=("id",), rows=3, last_order_key=OK3, tombstones=True),
        expected=ExpectedMirror(live_keys=3, last_live=OK2, last_any=OK3),
    )
    return replace(facts, **changes)


def keyless(**changes: Any) -> TableFacts:
    facts = TableFacts(
        table="shop.log",
        topic=TopicTable(events=2, row_events=2, last_order_key=OK2, row_events_after_truncate=2),
        changelog=ChangelogTable(rows=2, records=2, last_order_key=OK2),
        mirror=MirrorTable(key=(), rows=2, last_order_key=OK2),
    )
    return replace(facts, **changes)


def lake(*tables: TableFacts, **changes: Any) -> LakeFacts:
    facts = LakeFacts(topic="binlake.events", tables=tables, undecodable=1, quarantine_rows=1, quarantine_records=1)
    return replace(facts, **changes)


def diffs(facts: LakeFacts) -> list[tuple[str, str, object, object]]:
    return [(d.table, d.what, d.expected, d.found) for d in compare(facts).differences]


def test_agreement_prints_the_match_line_and_exits_0() -> None:
    verdict = compare(lake(keyed(), keyless()))
    assert verdict.matches and verdict.exit_code() == 0
    assert (verdict.tables, verdict.events) == (2, 7)
    assert render_text(verdict) == "lake matches the topic: 2 tables, 7 events"


def test_missing_and_foreign_changelog_events() -> None:
    table = keyed(changelog=ChangelogTable(rows=5, records=5, missing=1, extra=1, last_order_key=OK3))
    verdict = compare(lake(table))
    assert verdict.exit_code() == 1
    assert verdict.differences == [
        Difference(
            "shop.a",
            "changelog events",
            5,
            5,
            "1 topic events missing from the changelog; 1 changelog rows are no event of the topic",
        )
    ]
    fewer = keyed(changelog=ChangelogTable(rows=4, records=4, missing=1, last_order_key=OK3))
    assert diffs(lake(fewer)) == [("shop.a", "changelog events", 5, 4)]


def test_duplicate_changelog_rows_are_one_difference() -> None:
    table = keyed(changelog=ChangelogTable(rows=6, records=5, last_order_key=OK3))
    assert diffs(lake(table)) == [("shop.a", "duplicate changelog rows (same Kafka record)", 0, 1)]


def test_last_order_key_of_the_changelog() -> None:
    table = keyed(changelog=ChangelogTable(rows=5, records=5, last_order_key=OK2))
    assert diffs(lake(table)) == [("shop.a", "last row-event order_key in the changelog", OK3, OK2)]


def test_keyed_mirror_rows_and_newest_order_key() -> None:
    short = keyed(mirror=MirrorTable(key=("id",), rows=2, last_order_key=OK3, tombstones=True))
    assert diffs(lake(short)) == [("shop.a", "mirror rows (live keys in the topic)", 3, 2)]
    # Without tombstones the mirror keeps only live keys: its newest order_key is the newest live key's.
    plain = keyed(mirror=MirrorTable(key=("id",), rows=3, last_order_key=OK2))
    assert diffs(lake(plain)) == []
    stale = keyed(mirror=MirrorTable(key=("id",), rows=3, last_order_key=OK1))
    assert diffs(lake(stale)) == [("shop.a", "newest _binlake_order_key in the mirror (of a live key)", OK2, OK1)]
    behind = keyed(mirror=MirrorTable(key=("id",), rows=3, last_order_key=OK2, tombstones=True))
    what = "newest _binlake_order_key in the mirror and its tombstones"
    assert diffs(lake(behind)) == [("shop.a", what, OK3, OK2)]


def test_missing_mirror_of_a_table_with_row_events() -> None:
    verdict = compare(lake(keyed(mirror=None, expected=None)))
    assert [d.text() for d in verdict.differences] == [
        "shop.a: mirror table: expected present, found missing (4 row events)"
    ]
    ddl_only = keyed(topic=TopicTable(events=1), changelog=ChangelogTable(rows=1, records=1), mirror=None)
    assert diffs(lake(ddl_only)) == []


def test_mirror_without_topic_events_must_be_empty() -> None:
    orphan = TableFacts("shop.old", mirror=MirrorTable(key=("id",), rows=2, last_order_key=OK1), expected=None)
    assert diffs(lake(orphan)) == [
        ("shop.old", "mirror rows (live keys in the topic)", 0, 2),
        ("shop.old", "newest _binlake_order_key in the mirror (of a live key)", None, OK1),
    ]


def test_keyless_mirror_counts_row_events() -> None:
    assert diffs(lake(keyless())) == []
    more = keyless(mirror=MirrorTable(key=(), rows=3, last_order_key=OK2))
    assert diffs(lake(more)) == [("shop.log", "mirror rows (append-only: one per row event)", 2, 3)]


def test_truncate_applied_by_the_sink() -> None:
    topic = TopicTable(
        events=4, row_events=2, last_order_key=OK3, truncates=1, last_truncate=OK2, row_events_after_truncate=1
    )
    changelog = ChangelogTable(rows=4, records=4, last_order_key=OK3)
    applied = MirrorTable(key=(), rows=1, last_order_key=OK3, tracks_truncates=True, truncated_at=OK2)
    table = keyless(topic=topic, changelog=changelog, mirror=applied)
    assert diffs(lake(table)) == []
    emptied = replace(topic, last_order_key=OK1, last_truncate=OK2, row_events_after_truncate=0)
    empty = replace(applied, rows=0, last_order_key=None)
    assert diffs(lake(keyless(topic=emptied, changelog=replace(changelog, last_order_key=OK1), mirror=empty))) == []
    missed = replace(applied, truncated_at=OK1, rows=2)
    assert diffs(lake(replace(table, mirror=missed))) == [
        ("shop.log", "last TRUNCATE applied to the mirror", OK2, OK1),
        ("shop.log", "mirror rows (append-only: one per row event)", 1, 2),
    ]


def test_truncate_not_recorded_by_the_mirror_is_a_note() -> None:
    topic = TopicTable(
        events=3, row_events=2, last_order_key=OK2, truncates=1, last_truncate=OK3, row_events_after_truncate=0
    )
    table = keyless(topic=topic, changelog=ChangelogTable(rows=3, records=3, last_order_key=OK2))
    verdict = compare(lake(table))
    assert verdict.matches
    assert verdict.notes == [
        "shop.log: the topic has 1 TRUNCATE events but the mirror has no binlake.truncated_at "
        "(no TRUNCATE applied to it): the expected state ignores them too"
    ]
    assert render_text(verdict).splitlines()[-1] == "lake matches the topic: 1 tables, 3 events"


def test_history_current_rows_are_the_live_keys() -> None:
    mirror = MirrorTable(key=("id",), rows=3, last_order_key=OK3, tombstones=True, history_current=4)
    assert diffs(lake(keyed(mirror=mirror))) == [("shop.a", "current rows in the history table", 3, 4)]


def test_quarantine_counts_and_duplicates() -> None:
    assert diffs(lake(keyed(), undecodable=2, quarantine_rows=1, quarantine_records=1)) == [
        (QUARANTINE, "quarantined records (undecodable in the topic)", 2, 1)
    ]
    assert diffs(lake(keyed(), quarantine_rows=2)) == [
        (QUARANTINE, "duplicate quarantine rows (same Kafka record)", 0, 1)
    ]


def test_notes_for_other_topics_and_an_empty_topic() -> None:
    verdict = compare(lake(other_topics={"old.events": 7}, undecodable=0, quarantine_rows=0, quarantine_records=0))
    assert verdict.matches
    assert verdict.notes == [
        "the changelog holds 7 rows read from topic old.events: not compared (see --topic)",
        "topic binlake.events holds no records",
    ]


def test_note_for_a_topic_trimmed_by_retention() -> None:
    verdict = compare(lake(keyed(), topic_start={0: 0, 1: 120}))
    assert verdict.matches
    assert verdict.notes == [
        "topic binlake.events partition 1 starts at offset 120: older records are gone (retention or compaction), "
        "so the lake may hold events the topic no longer has"
    ]


def test_text_and_json_reports_of_differences() -> None:
    facts = lake(keyed(mirror=MirrorTable(key=("id",), rows=2, last_order_key=OK3, tombstones=True)), keyless())
    verdict = compare(facts)
    assert render_text(verdict).splitlines() == [
        "shop.a: mirror rows (live keys in the topic): expected 3, found 2",
        "lake differs from topic binlake.events: 1 differences in 1 tables (2 tables, 7 events compared)",
    ]
    document = json.loads(to_json(render_json(verdict, facts)))
    assert document["matches"] is False
    assert document["differences"] == [
        {"table": "shop.a", "what": "mirror rows (live keys in the topic)", "expected": 3, "found": 2, "detail": ""}
    ]
    assert document["facts"]["tables"]["shop.a"]["mirror"]["key"] == ["id"]
    assert sorted(document["facts"]["tables"]) == ["shop.a", "shop.log"]


def test_duration_and_grid() -> None:
    assert [duration(s) for s in (None, 0.04, 59.94, 61, 3600 * 3 + 720, 86400 * 2 + 3600 * 4 + 5, -2)] == [
        None,
        "0.0 s",
        "59.9 s",
        "1 min 01 s",
        "3 h 12 min",
        "2 d 04 h",
        "-2.0 s",
    ]
    when = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert grid(["NAME", "ROWS", "AT"], [["a", 5, when], ["bbb", None, None]]).splitlines() == [
        "NAME  ROWS  AT",
        "a        5  2024-05-01 12:00:00Z",
        "bbb      -  -",
    ]
    assert json.loads(to_json({"at": when})) == {"at": "2024-05-01T12:00:00+00:00"}


def test_cli_usage_and_configuration_errors_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["lake"])
    assert usage.value.code == 2
    monkeypatch.setenv("BINLAKE_SINK_SHUFFLE_PARTITIONS", "0")
    assert main(["lake", "verify", "--lake", "/nowhere"]) == 2  # fails while loading settings: no Spark started
    assert "BINLAKE_SINK_SHUFFLE_PARTITIONS" in capsys.readouterr().err


def test_events_duplicated_by_origin_are_a_difference() -> None:
    """One vendor change published twice upstream: the sink applies it once, verify names it."""
    table = keyed(topic=replace(keyed().topic, duplicated_by_origin=2))
    verdict = compare(lake(table))
    assert [(d.table, d.expected, d.found) for d in verdict.differences] == [("shop.a", 0, 2)]
    assert "duplicated by origin" in verdict.differences[0].what
    assert "exactly-once" in verdict.differences[0].detail
