"""``make fuzz``'s harness kept from rotting: a short run through every format, and its checks checked.

``make fuzz`` (``tests/fuzz``) takes minutes, so ``make test`` runs the same
seeds, mutations and oracle for a couple of thousand inputs (the hypothesis
engine, in-process, on the compiled build), shows that the oracle reports
each kind of finding it exists for (a crash, a hang, a reject without a
stable code, an event the codec cannot write),
and runs the atheris driver end to end on one format.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_VALUE, INTERNAL, RejectError
from binlake.shared.parsing.result import Parsed
from tests.fuzz import hypothesis_engine
from tests.fuzz.mutate import Mutator, dumps, loads
from tests.fuzz.oracle import Oracle
from tests.fuzz.seeds import targets

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
INPUTS_PER_FORMAT = 150


@pytest.mark.parametrize("format_id", sorted(targets()))
def test_a_short_fuzz_finds_nothing(format_id: str) -> None:
    oracle = Oracle(targets()[format_id])
    hypothesis_engine.fuzz(oracle, INPUTS_PER_FORMAT, seed_value=1, derandomize=True)
    tally = oracle.tally
    assert tally.inputs == INPUTS_PER_FORMAT
    assert not tally.found, [f.as_json() | {"detail": f.detail} for f in tally.findings.values()]
    assert tally.accepted and sum(tally.rejects.values())  # the mutations reach both outcomes


def test_mutations_keep_json_text_and_change_it() -> None:
    doc = b'{"a":1.10,"a":-0,"b":[1e400,"x\\u0000"]}'
    assert dumps(loads(doc), ascii_only=True).encode() == doc  # numbers' texts and repeated keys survive
    mutator = Mutator(targets()["canal-json"])
    seed = targets()["canal-json"].seeds[0]
    outs = {mutator(seed, 1 << 16, n) for n in range(200)}
    assert len(outs) > 150


def _oracle(parse: Any, limit: float = 1.0) -> Oracle:
    oracle = Oracle(targets()["canal-json"], time_limit_s=limit)
    oracle.parse = parse
    return oracle


def _kind(oracle: Oracle) -> str | None:
    finding = oracle.check(b"\x00{}")
    return None if finding is None else finding.kind


def _reject(code: str, reason: str) -> Any:
    def parse(raw: bytes, ctx: ParseContext) -> Parsed:
        raise RejectError(code, reason)

    return parse


def test_the_oracle_reports_each_kind_of_finding() -> None:
    def crash(raw: bytes, ctx: ParseContext) -> Parsed:
        raise KeyError("a bug")

    def spin(raw: bytes, ctx: ParseContext) -> Parsed:
        while True:
            pass

    real = targets()["canal-json"].seeds[0]
    assert _kind(_oracle(crash)) == "crash"
    assert _kind(_oracle(spin, limit=0.05)) == "hang"
    assert _kind(_oracle(_reject(INTERNAL, "a bug"))) == "bad_reject"
    assert _kind(_oracle(_reject("made_up", "why"))) == "bad_reject"
    assert _kind(_oracle(_reject(BAD_VALUE, " "))) == "bad_reject"
    assert _kind(_oracle(_reject(BAD_VALUE, "column 'a' is not a number"))) is None
    honest = Oracle(targets()["canal-json"])
    assert honest.check(real) is None and honest.last.startswith("accepted")

    def unwritable(raw: bytes, ctx: ParseContext) -> Parsed:
        parsed = registry.get("canal-json").parse(raw, ctx)
        for event in parsed.events:
            event.after = {"v": object()}  # type: ignore[dict-item]  # no canonical value: the codec refuses
        return parsed

    finding = _oracle(unwritable).check(real)
    assert finding is not None and finding.kind == "crash" and finding.where.startswith("codec")


@pytest.mark.skipif(
    not (sys.platform == "linux" and platform.machine() == "x86_64"), reason="atheris ships wheels for Linux x86_64"
)
def test_make_fuzz_runs_under_atheris(tmp_path: Path) -> None:
    """The driver, an atheris child, both replays and the summary, on one format for a few hundred inputs."""
    command = [
        sys.executable,
        "-m",
        "tests.fuzz.run",
        "--formats",
        "ckafka-v1",
        "--inputs",
        "300",
        "--out",
        str(tmp_path),
    ]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    summary = json.loads(done.stdout)
    assert summary["engine"] == "atheris"
    result = summary["formats"]["ckafka-v1"]
    assert result["inputs"] == 300 and result["libfuzzer"]["edges"] > 0
    assert summary["coverage"]["services/ckafka_v1"]["lines_covered"] > 0
    assert summary["replay"]["compiled"]["ckafka-v1"]["inputs"] >= 300 // 10
