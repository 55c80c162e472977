"""The fuzz baseline (``tests/fuzz/baseline.py``) is deterministic, and ``baseline.json`` is this code's.

Its full run (1,000,000 inputs, minutes) is ``python -m tests.fuzz.run --baseline-check``; here a few
hundred inputs per format: twice in this process (warm caches must not change an outcome), once in a
process with another hash seed through the command line (no set or dict order may leak into an input or
an outcome), and the first 100 per format against the checked-in baseline's digest after 100 inputs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from binlake.shared.normalize import Normalized
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import INTERNAL, MALFORMED
from binlake.shared.parsing.result import Rejected
from tests.fuzz import baseline
from tests.fuzz.seeds import corpus_targets

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
INPUTS = 200


def _runs(count: int) -> dict[str, baseline.Outcomes]:
    runs = {f: baseline.run_format(corpus_targets()[f], count) for f in registry.format_ids()}
    assert not [crash for run in runs.values() for crash in run.crashes]
    return runs


def _document(count: int) -> dict[str, Any]:
    return baseline.document(_runs(count))


def test_the_same_inputs_give_the_same_outcomes_twice() -> None:
    first = _document(INPUTS)
    assert _document(INPUTS) == first
    for entry in first["formats"].values():
        assert entry["inputs"] == INPUTS and entry["accepted"] and entry["rejected"]


def test_another_process_and_hash_seed_give_the_same_document(tmp_path: Path) -> None:
    out = tmp_path / "baseline.json"
    command = [sys.executable, "-m", "tests.fuzz.run", "--baseline-write", "--baseline-inputs", str(INPUTS)]
    command += ["--baseline-file", str(out), "--out", str(tmp_path)]
    env = os.environ | {"PYTHONHASHSEED": "4747"}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(out.read_text()) == _document(INPUTS)
    check = [*command[:3], "--baseline-check", *command[4:]]
    assert subprocess.run(check, cwd=ROOT, env=env, capture_output=True, timeout=300, check=False).returncode == 0


def test_a_run_of_fewer_inputs_is_a_prefix() -> None:
    target = corpus_targets()["canal-json"]
    assert list(baseline.inputs(target, 150)) == list(baseline.inputs(target, 300))[:150]
    assert baseline.nth_input("canal-json", 149) == list(baseline.inputs(target, 150))[-1]


def test_the_checked_in_baseline_is_this_code_s() -> None:
    """Every format, its full count, and its first 100 outcomes as the file has them (a change of codec
    outcomes, or of the inputs: regenerate with ``python -m tests.fuzz.run --baseline-write``, minutes,
    and say in the commit why the outcomes changed)."""
    pinned = json.loads(baseline.BASELINE.read_text())
    assert sorted(pinned["formats"]) == registry.format_ids()
    assert {entry["inputs"] for entry in pinned["formats"].values()} == {baseline.INPUTS_PER_FORMAT}
    runs = {f: baseline.run_format(corpus_targets()[f], 100) for f in registry.format_ids()}
    assert baseline.differences(pinned, runs) == []


def test_differences_name_the_format_and_what_changed() -> None:
    runs = {"canal-json": baseline.run_format(corpus_targets()["canal-json"], 100)}
    pinned = baseline.document(runs)
    assert baseline.differences(pinned, runs) == []
    entry = pinned["formats"]["canal-json"]
    changed = json.loads(json.dumps(pinned))
    changed["formats"]["canal-json"]["outcomes_sha256"] = "0" * 64
    changed["formats"]["canal-json"]["accepted"] = entry["accepted"] + 1
    assert baseline.differences(changed, runs) == [
        f"canal-json: outcomes differ (accepted {entry['accepted'] + 1} -> {entry['accepted']})"
    ]
    changed["formats"]["canal-json"]["inputs_sha256"] = "0" * 64
    assert "the inputs differ" in baseline.differences(changed, runs)[0]
    short = {"canal-json": baseline.run_format(corpus_targets()["canal-json"], 50)}
    assert baseline.differences(pinned, short) == ["canal-json: no digest after 50 inputs (kept after 100)"]


class _Codec:
    """A codec that fails on a few inputs: raises, rejects as ``internal``, rejects, accepts, in turn."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, raw: bytes, topic: str, partition: int, offset: int) -> Normalized | Rejected:
        self.calls += 1
        turn = self.calls % 4
        if turn == 1:
            raise KeyError("a bug")
        if turn == 2:
            return Rejected(INTERNAL, "parser error KeyError at x.py:1 in f")
        if turn == 3:
            return Rejected(MALFORMED, "not JSON")
        return Normalized([("db.t", "INSERT", 1, [b"k", b"v"])])


def test_crashes_are_failures_not_outcomes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    codec = _Codec()

    def codec_for(format_id: str, ctx: ParseContext) -> _Codec:
        return codec

    monkeypatch.setattr(baseline, "codec_for", codec_for)
    run = baseline.run_format(corpus_targets()["canal-json"], 8)
    assert [(c.index, c.what.split(" ")[0]) for c in run.crashes] == [
        (0, "KeyError"),
        (1, "internal"),
        (4, "KeyError"),
        (5, "internal"),
    ]
    assert (run.inputs, run.accepted, dict(run.rejects)) == (8, 2, {MALFORMED: 2})
    out = tmp_path / "baseline.json"
    code = baseline.main(write=True, formats=["canal-json"], count=8, limit_s=1.0, out=tmp_path, path=out, dump=None)
    assert code == 1 and not out.exists()
    assert sorted(p.name for p in (tmp_path / "baseline" / "canal-json").iterdir()) == [
        "crash-0",
        "crash-1",
        "crash-4",
        "crash-5",
    ]
