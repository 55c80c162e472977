"""One format under atheris (libFuzzer), in a process of its own: ``tests.fuzz.run`` starts it.

``python -m tests.fuzz.atheris_child FOLDER RUNS SECONDS_PER_INPUT SEED`` fuzzes
the format whose ``target.json`` and ``seeds/`` ``FOLDER`` holds (written by
the driver), for ``RUNS`` inputs. The compiled modules are loaded from their
Python source (``tests.fuzz.pure_source``) and, with the rest of ``shared``
and ``services``, instrumented by atheris, so libFuzzer is guided by the
parsers' and lanes' planners' branches (the Rust lanes themselves are not
instrumented: they are checked, not explored). libFuzzer keeps each input that
reached new code in ``FOLDER/corpus``; findings go to ``FOLDER/findings``
(input and description), and the tally to ``FOLDER/stats.json`` as it runs,
since libFuzzer ends the process without returning, and each input to
``FOLDER/current`` before it runs. A Python-level hang is stopped by the
oracle's CPU time limit; one in native code, by libFuzzer's ``-timeout``
(SIGALRM), after which the driver keeps ``current`` as the finding's input.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HARD_TIMEOUT_FACTOR = 10
"""libFuzzer's -timeout (wall clock, whole seconds): this many times the oracle's CPU limit, at least 10 s."""


def main(argv: list[str]) -> None:
    folder, runs, limit, seed = Path(argv[1]), int(argv[2]), float(argv[3]), int(argv[4])
    from tests.fuzz import pure_source

    pure_source.install()
    import atheris

    with atheris.instrument_imports(include=["binlake.services", "binlake.shared"]):
        from binlake.shared.parsing import registry

        for format_id in registry.format_ids():
            registry.get(format_id)
        from tests.fuzz.mutate import Mutator
        from tests.fuzz.oracle import Finding, Oracle
        from tests.fuzz.seeds import Target

    target = Target.load(folder)
    oracle = Oracle(target, limit)
    mutator = Mutator(target, lambda data, max_size, rng: atheris.Mutate(data, max_size))
    findings = folder / "findings"
    findings.mkdir(exist_ok=True)
    (folder / "corpus").mkdir(exist_ok=True)
    (folder / "artifacts").mkdir(exist_ok=True)
    stats = folder / "stats.json"
    last = [time.monotonic()]
    current = os.open(folder / "current", os.O_RDWR | os.O_CREAT | os.O_TRUNC)

    def save(finding: Finding) -> None:
        (findings / finding.name()).write_bytes(finding.data)
        (findings / (finding.name() + ".json")).write_text(json.dumps(finding.as_json(), indent=1))

    def test_one(data: bytes) -> None:
        os.ftruncate(current, 0)  # the input being run, for the driver if native code hangs or crashes here
        os.pwrite(current, data, 0)
        finding = oracle.check(data)
        if finding is not None:
            save(finding)
        now = time.monotonic()
        if finding is not None or now - last[0] > 2 or oracle.tally.inputs >= runs or oracle.tally.inputs % 1000 == 0:
            last[0] = now
            stats.write_text(json.dumps(oracle.tally.as_json()))

    max_len = max(4096, 2 * max(len(s) for s in target.seeds))
    hard = max(10, int(HARD_TIMEOUT_FACTOR * limit))
    args = [
        argv[0],
        str(folder / "corpus"),
        str(folder / "seeds"),
        f"-runs={runs}",
        f"-max_len={max_len}",
        f"-timeout={hard}",
        "-rss_limit_mb=4096",
        f"-seed={seed}",
        f"-artifact_prefix={folder}/artifacts/",
        "-print_final_stats=1",
    ]
    atheris.Setup(args, test_one, custom_mutator=mutator)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
