"""The fuzzer where atheris does not install: hypothesis draws, the same mutations, a growing pool.

atheris ships wheels for Linux x86_64 only (elsewhere it needs clang's
libFuzzer to build). Without it, hypothesis drives the same ``Mutator`` from
a pool that starts as the seeds and keeps every input whose outcome
(accepted with or without the lane, or reject code and the start of its
reason) had not been seen: a coarse stand-in for coverage feedback, so
mutations pile up on inputs that got somewhere new. Findings are tallied, not
raised, so one run reports all of them. ``make test``'s harness test runs it
in-process for a few thousand inputs; ``python -m tests.fuzz.hypothesis_engine
FOLDER RUNS SECONDS_PER_INPUT SEED`` is ``tests.fuzz.run``'s child without
atheris, with ``tests.fuzz.atheris_child``'s folder layout.
"""

from __future__ import annotations

import json
import random
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tests.fuzz.mutate import Mutator
from tests.fuzz.oracle import Finding, Oracle
from tests.fuzz.seeds import Target

MAX_SIZE = 65536
PER_EXAMPLE = 16
"""Inputs per hypothesis example: hypothesis draws where a batch starts, a plain RNG the rest (its own
cost per example is a few times a parse's)."""
_DIGITS = re.compile(r"\d+")


def fuzz(
    oracle: Oracle,
    runs: int,
    seed_value: int,
    *,
    kept: Callable[[bytes], None] | None = None,
    found: Callable[[Finding], None] | None = None,
    derandomize: bool = False,
) -> None:
    """Check ``runs`` mutated inputs of ``oracle``'s format (the seeds themselves first)."""
    target: Target = oracle.target
    mutator = Mutator(target)
    pool = list(target.seeds)
    seen: set[str] = set()
    checked = [0]

    def one(data: bytes) -> None:
        checked[0] += 1
        finding = oracle.check(data)
        if finding is not None and found is not None:
            found(finding)
        signature = _DIGITS.sub("#", oracle.last[:80])
        if signature not in seen:
            seen.add(signature)
            pool.append(data)
            if kept is not None:
                kept(data)

    for data in target.seeds[:runs]:
        one(data)
    left = runs - min(runs, len(target.seeds))
    if left <= 0:
        return

    @seed(seed_value)
    @settings(
        max_examples=-(-left // PER_EXAMPLE),
        database=None,
        deadline=None,
        derandomize=derandomize,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.integers(0, 2**64 - 1))
    def mutated(draw: int) -> None:
        batch(random.Random(draw))

    def batch(rng: random.Random) -> None:
        for _ in range(min(PER_EXAMPLE, runs - checked[0])):
            data = pool[rng.randrange(len(pool))]
            for _ in range(rng.choice((1, 1, 2, 3))):
                data = mutator(data, MAX_SIZE, rng.getrandbits(32))
            one(data)

    mutated()
    rest = random.Random(seed_value)
    while checked[0] < runs:  # hypothesis may stop short of max_examples
        batch(rest)


def main(argv: list[str]) -> None:
    folder, runs, limit, seed_value = Path(argv[1]), int(argv[2]), float(argv[3]), int(argv[4])
    target = Target.load(folder)
    oracle = Oracle(target, limit)
    for name in ("findings", "corpus", "artifacts"):
        (folder / name).mkdir(exist_ok=True)
    stats = folder / "stats.json"
    last = [time.monotonic()]

    count = iter(range(1 << 62))

    def kept(data: bytes) -> None:
        (folder / "corpus" / f"kept-{next(count):06d}").write_bytes(data)
        if time.monotonic() - last[0] > 2:
            last[0] = time.monotonic()
            stats.write_text(json.dumps(oracle.tally.as_json()))

    def found(finding: Finding) -> None:
        (folder / "findings" / finding.name()).write_bytes(finding.data)
        (folder / "findings" / (finding.name() + ".json")).write_text(json.dumps(finding.as_json(), indent=1))

    fuzz(oracle, runs, seed_value, kept=kept, found=found)
    stats.write_text(json.dumps(oracle.tally.as_json()))


if __name__ == "__main__":
    main(sys.argv)
