"""The sustained bench's freshness by commit times (pure helpers of ``tests.bench.sink_sustained``)."""

from __future__ import annotations

import pytest

from tests.bench import sink_sustained

pytestmark = pytest.mark.unit


def test_progress_commits_add_the_trigger_duration_to_its_start() -> None:
    progress = [
        {"timestamp": "2026-11-27T10:00:00.000Z", "numInputRows": 5, "durationMs": {"triggerExecution": 1500}},
        {"timestamp": "2026-11-27T10:00:02.000Z", "numInputRows": 0, "durationMs": {"triggerExecution": 200}},
        {"timestamp": "2026-11-27T10:00:03.250Z", "numInputRows": 7, "durationMs": {"triggerExecution": 750}},
    ]
    start = 1_795_773_600.0  # 2026-11-27T10:00:00Z
    assert sink_sustained.progress_commits(progress) == [(start + 1.5, 5), (start + 2.2, 5), (start + 4.0, 12)]


def test_commit_freshness_splits_a_send_over_the_commits_that_reach_it() -> None:
    ticks = [(4, 1_000), (10, 2_000), (12, 3_000)]  # 4 events sent at 1 s, 6 at 2 s, 2 at 3 s
    commits = [(2.5, 6), (2.5, 6), (4.0, 11)]  # the 12th event is never committed
    assert sink_sustained.commit_freshness(ticks, commits) == [(1.5, 4), (0.5, 2), (2.0, 4), (1.0, 1)]
    assert sink_sustained.commit_freshness(ticks, commits, sent_from_ms=2_000) == [(0.5, 2), (2.0, 4), (1.0, 1)]
    assert sink_sustained.commit_freshness(ticks, []) == []


def test_parse_mirror_metrics_takes_the_least_newest_event_over_the_tables() -> None:
    text = "\n".join(
        [
            "# HELP binlake_sink_mirror_last_event_timestamp_seconds Newest ts_ms applied to each mirror",
            'binlake_sink_mirror_last_event_timestamp_seconds{table="db.a"} 1.7e+09',
            'binlake_sink_mirror_last_event_timestamp_seconds{table="db.b"} 1.6e+09',
            "binlake_sink_mirror_last_commit_timestamp_seconds 1.8e+09",
        ]
    )
    assert sink_sustained.parse_mirror_metrics(text, ["db.a", "db.b"]) == (1.6e9, 1.8e9)
    # A table no mirror batch has reached yet: the mirrors hold nothing for sure.
    assert sink_sustained.parse_mirror_metrics(text, ["db.a", "db.c"]) == (None, 1.8e9)
    # Before the first mirror commit the gauge reads 0.
    assert sink_sustained.parse_mirror_metrics("binlake_sink_mirror_last_commit_timestamp_seconds 0.0", []) == (
        None,
        None,
    )


def test_mirror_freshness_is_the_first_poll_that_holds_each_send() -> None:
    ticks = [(4, 1_000), (10, 2_000), (12, 3_000)]  # 4 events sent at 1 s, 6 at 2 s, 2 at 3 s
    polls = [(1.5, None, None), (2.5, 1.0, 2.4), (5.0, 2.0, 4.9), (6.0, 2.0, 4.9)]
    assert sink_sustained.mirror_freshness(ticks, polls) == [(1.5, 4), (3.0, 6)]  # the 3 s sends: no poll yet
    assert sink_sustained.mirror_freshness(ticks, polls, sent_from_ms=2_000) == [(3.0, 6)]
    assert sink_sustained.mirror_freshness(ticks, polls, sent_before_ms=2_000) == [(1.5, 4)]
