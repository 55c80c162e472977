"""The fuzz baseline: fixed inputs, each one's outcome through the Python codec, one digest per format.

``make fuzz`` is coverage-guided and keeps what reached new code, so no two runs see the same inputs and
none can say whether a change kept every outcome. The baseline can: its inputs are fixed-seed mutations
(``mutate.Mutator``, with its own byte mutations, not libFuzzer's) of each format's golden cases
(``seeds.corpus_targets``: not the generated traffic, whose renderers may change), and what an input is
never depends on what an earlier one did. So the same corpus, mutator and seed give the same inputs, and
the same codec the same outcomes, in any process. Issue #47 holds the rewritten codec to them.

Each input goes through the codec (``codec_for``: the normalizer's one route) under the parse settings its
first byte picks, at ``seeds``' coordinates; its outcome is ``record_digest.outcome_text``: the sha256 of
the records it publishes, or its reject code. An exception out of the codec, an ``internal`` reject (the
registry's answer to a parser exception, and the codec's to an event it cannot encode: what ``make fuzz``
calls a crash) and an input over the CPU time limit are *crashes*: failures, never part of a baseline
(each input is kept in ``OUT/baseline/<format>/`` for ``python -m tests.fuzz.run --replay``).

``baseline.json`` holds per format the inputs, how many were accepted and rejected (and the rejects by
code), the sha256 of all outcomes in order, the sha256 of the inputs (a difference there means the inputs
changed, not the codec: the outcomes cannot be compared), and the outcomes' digest after the first 100,
1,000 and 10,000 inputs, so a short run can be checked against it too::

    python -m tests.fuzz.run --baseline-write      # INPUTS_PER_FORMAT per format, about 1,000,000 in all
    python -m tests.fuzz.run --baseline-check      # the same inputs again: exit 1 on any difference
    python -m tests.fuzz.run --baseline-check --baseline-inputs 1000 --formats canal-json

``--baseline-dump FILE`` also writes every input's outcome (``format index outcome``): run it before and
after a change and ``diff`` the two to find the inputs that differ; ``nth_input`` gives an input's bytes.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from binlake.shared.normalize import codec_for
from binlake.shared.parsing.errors import INTERNAL
from binlake.shared.parsing.result import Rejected
from tests.fuzz.mutate import Mutator
from tests.fuzz.oracle import Hang, time_limit, where
from tests.fuzz.seeds import OFFSET, PARTITION, TOPIC, Target, corpus_targets
from tests.support.record_digest import outcome_text

BASELINE = Path(__file__).with_name("baseline.json")
SEED = 47
INPUTS_PER_FORMAT = 62_500
"""16 formats today: 1,000,000 inputs in all, as many as ``make fuzz`` checks."""
PREFIXES = (100, 1_000, 10_000)
"""Where the outcomes' digest is also kept: a short run's check."""
MAX_SIZE = 65536
MUTATIONS = (1, 1, 2, 3)
"""How many times an input is mutated from its seed (drawn), as the hypothesis engine does. Mutating the
previous input instead, as the fuzzers' pools do, gave fewer accepted inputs and fewer distinct outcomes
(byte mutations pile up into ``malformed``): without coverage feedback, depth buys nothing here."""
VERSION = 1
"""Of the file's layout and of the input scheme above: another version is another set of inputs."""


def inputs(target: Target, count: int, seed: int = SEED) -> Iterator[bytes]:
    """The first ``count`` baseline inputs of ``target``: its seeds, then mutations (a run of fewer inputs
    is a prefix of a run of more)."""
    mutator = Mutator(target)  # its own byte mutations (no atheris): the same bytes wherever it runs
    rng = random.Random(f"{seed}:{target.format_id}")  # a str seed is hashed by sha512: stable everywhere
    for index in range(count):
        if index < len(target.seeds):
            yield target.seeds[index]
            continue
        data = target.seeds[rng.randrange(len(target.seeds))]
        for _ in range(rng.choice(MUTATIONS)):
            data = mutator(data, MAX_SIZE, rng.getrandbits(32))
        yield data


def nth_input(format_id: str, index: int, seed: int = SEED) -> bytes:
    """Input ``index`` (from 0) of ``format_id``'s baseline."""
    *_, data = inputs(corpus_targets()[format_id], index + 1, seed)
    return data


@dataclass
class Crash:
    index: int
    what: str
    detail: str
    data: bytes


@dataclass
class Outcomes:
    """One format's run."""

    format_id: str
    inputs: int = 0
    accepted: int = 0
    rejects: Counter[str] = field(default_factory=Counter)
    outcomes: hashlib._Hash = field(default_factory=hashlib.sha256)
    given: hashlib._Hash = field(default_factory=hashlib.sha256)
    prefixes: dict[str, str] = field(default_factory=dict)
    crashes: list[Crash] = field(default_factory=list)
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        """The format's entry in ``baseline.json`` (no time: the file changes only when outcomes do)."""
        return {
            "inputs": self.inputs,
            "accepted": self.accepted,
            "rejected": sum(self.rejects.values()),
            "rejects": dict(sorted(self.rejects.items())),
            "outcomes_sha256": self.outcomes.hexdigest(),
            "inputs_sha256": self.given.hexdigest(),
            "prefixes": self.prefixes,
        }


def run_format(
    target: Target,
    count: int,
    *,
    seed: int = SEED,
    limit_s: float = 1.0,
    dump: Callable[[str], None] | None = None,
) -> Outcomes:
    """The outcomes of ``target``'s first ``count`` baseline inputs."""
    codecs = [codec_for(target.format_id, setting.context()) for setting in target.settings]
    run = Outcomes(target.format_id)
    started = time.perf_counter()
    for index, data in enumerate(inputs(target, count, seed)):
        run.inputs += 1
        run.given.update(len(data).to_bytes(8, "big") + data)
        selector, raw = target.split(data)
        try:
            with time_limit(limit_s):
                result = codecs[selector](raw, TOPIC, PARTITION, OFFSET)
        except Hang:
            run.crashes.append(Crash(index, "hang", f"over {limit_s} s of CPU", data))
            continue
        except Exception as exc:  # noqa: BLE001 - a codec must never raise: the failure this run reports
            run.crashes.append(Crash(index, where(exc), "".join(traceback.format_exception(exc)[-12:]), data))
            continue
        if isinstance(result, Rejected):
            if result.code == INTERNAL:
                run.crashes.append(Crash(index, "internal reject", result.reason, data))
                continue
            run.rejects[result.code] += 1
        else:
            run.accepted += 1
        line = outcome_text(result)
        run.outcomes.update(line.encode() + b"\n")
        if dump is not None:
            dump(f"{target.format_id} {index} {line}")
        if run.inputs in PREFIXES:
            run.prefixes[str(run.inputs)] = run.outcomes.hexdigest()
    run.seconds = time.perf_counter() - started
    return run


def run_all(
    formats: list[str], count: int | None, *, limit_s: float, out: Path, dump: IO[str] | None = None
) -> dict[str, Outcomes]:
    """Each format's run (``count`` inputs each, else ``INPUTS_PER_FORMAT``), one line each on stderr;
    crashes' inputs are written to ``out/baseline/<format>/``."""
    runs: dict[str, Outcomes] = {}
    write = None if dump is None else (lambda line: print(line, file=dump))
    for format_id in formats:
        target = corpus_targets()[format_id]
        run = run_format(target, count or INPUTS_PER_FORMAT, limit_s=limit_s, dump=write)
        runs[format_id] = run
        rate = round(run.inputs / run.seconds) if run.seconds else 0
        print(
            f"{format_id}: {run.inputs} inputs, {run.accepted} accepted, {sum(run.rejects.values())} rejected, "
            f"{len(run.crashes)} crashes, {run.seconds:.1f} s ({rate}/s)",
            file=sys.stderr,
        )
        for crash in run.crashes:
            folder = out / "baseline" / format_id
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"crash-{crash.index}").write_bytes(crash.data)
            print(f"  crash at input {crash.index}: {crash.what}\n{crash.detail}", file=sys.stderr)
    return runs


def document(runs: dict[str, Outcomes]) -> dict[str, Any]:
    """``baseline.json``'s content."""
    return {
        "version": VERSION,
        "seed": SEED,
        "inputs": sum(run.inputs for run in runs.values()),
        "formats": {format_id: run.as_json() for format_id, run in runs.items()},
    }


def differences(pinned: dict[str, Any], runs: dict[str, Outcomes]) -> list[str]:
    """How ``runs`` differ from the baseline ``pinned``, one line per format that differs (empty: none)."""
    found: list[str] = []
    if pinned.get("version") != VERSION or pinned.get("seed") != SEED:
        return [f"baseline version {pinned.get('version')} seed {pinned.get('seed')}, this code {VERSION} {SEED}"]
    for format_id, run in runs.items():
        entry = pinned["formats"].get(format_id)
        if entry is None:
            found.append(f"{format_id}: not in the baseline")
        elif run.inputs != entry["inputs"]:
            digest = entry["prefixes"].get(str(run.inputs))
            if digest is None:
                kept = ", ".join(sorted({*entry["prefixes"], str(entry["inputs"])}, key=int))
                found.append(f"{format_id}: no digest after {run.inputs} inputs (kept after {kept})")
            elif digest != run.outcomes.hexdigest():
                found.append(f"{format_id}: the first {run.inputs} outcomes differ")
        else:
            found.extend(_compare(format_id, entry, run.as_json()))
    return found


def _compare(format_id: str, entry: dict[str, Any], now: dict[str, Any]) -> list[str]:
    if now["inputs_sha256"] != entry["inputs_sha256"]:
        return [f"{format_id}: the inputs differ (corpus, mutator or fastavro changed): outcomes not comparable"]
    if now["outcomes_sha256"] == entry["outcomes_sha256"]:
        return []
    counts = ", ".join(
        f"{name} {entry.get(name, 0)} -> {now.get(name, 0)}"
        for name in ("accepted", "rejected")
        if entry.get(name, 0) != now.get(name, 0)
    )
    codes = ", ".join(
        f"{code} {entry['rejects'].get(code, 0)} -> {now['rejects'].get(code, 0)}"
        for code in sorted(entry["rejects"].keys() | now["rejects"].keys())
        if entry["rejects"].get(code, 0) != now["rejects"].get(code, 0)
    )
    what = "; ".join(part for part in (counts, codes) if part) or "same counts, other records or codes"
    return [f"{format_id}: outcomes differ ({what})"]


def main(
    *,
    write: bool,
    formats: list[str],
    count: int | None,
    limit_s: float,
    out: Path,
    path: Path,
    dump: Path | None,
) -> int:
    """``--baseline-write`` / ``--baseline-check`` (``tests.fuzz.run``): 0 when all is well."""
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        dumped = None if dump is None else stack.enter_context(dump.open("w"))
        runs = run_all(formats, count, limit_s=limit_s, out=out, dump=dumped)
    crashes = sum(len(run.crashes) for run in runs.values())
    total = sum(run.inputs for run in runs.values())
    print(f"{total} inputs in {time.monotonic() - started:.1f} s, {crashes} crashes", file=sys.stderr)
    if crashes:
        print(f"FAILED: {crashes} crashes (inputs in {out / 'baseline'}); nothing written", file=sys.stderr)
        return 1
    if write:
        path.write_text(json.dumps(document(runs), indent=1) + "\n")
        print(f"wrote {path}", file=sys.stderr)
        return 0
    found = differences(json.loads(path.read_text()), runs)
    for line in found:
        print(line)
    print(f"{len(found)} differences from {path} over {len(runs)} formats")
    return 1 if found else 0
