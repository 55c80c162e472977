"""``make bench`` saves each report under ``bench/results/`` (``tests.bench.run.write_results``)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from tests.bench import run

pytestmark = pytest.mark.unit

AT = dt.datetime(2026, 11, 28, 11, 10, 58, 123456, tzinfo=dt.UTC)


def test_a_report_is_saved_as_json_named_by_its_utc_time(tmp_path: Path) -> None:
    folder = tmp_path / "bench" / "results"  # made when missing
    report = {"machine": {"cpus": 2}, "kafka_normalizer": {"skipped": "no java"}}
    path = run.write_results(report, folder, now=AT)
    assert path == folder / "2026-11-28T111058Z.json"
    assert json.loads(path.read_text("utf-8")) == report


def test_the_name_is_utc_whatever_the_zone_of_the_time_given(tmp_path: Path) -> None:
    shanghai = dt.timezone(dt.timedelta(hours=8))
    path = run.write_results({}, tmp_path, now=AT.astimezone(shanghai))
    assert path.name == "2026-11-28T111058Z.json"


def test_a_second_report_in_the_same_second_gets_a_name_of_its_own(tmp_path: Path) -> None:
    first = run.write_results({"n": 1}, tmp_path, now=AT)
    second = run.write_results({"n": 2}, tmp_path, now=AT)
    assert (first.name, second.name) == ("2026-11-28T111058Z.json", "2026-11-28T111058Z-2.json")
    assert json.loads(first.read_text("utf-8")) == {"n": 1}
    assert json.loads(second.read_text("utf-8")) == {"n": 2}


def test_committed_results_are_json_named_by_time_and_say_when_they_ran() -> None:
    files = sorted(run.RESULTS.glob("*.json"))
    assert files, "bench/results/ holds at least the latest figures"
    for path in files:
        report = json.loads(path.read_text("utf-8"))
        stem = path.stem.split("-")[0] if path.stem.count("-") > 2 else path.stem
        at = dt.datetime.strptime(stem, run.STAMP)
        assert report["run"]["utc"] == at.strftime("%Y-%m-%dT%H:%M:%SZ"), path.name
