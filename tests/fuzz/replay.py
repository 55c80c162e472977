"""After fuzzing: what the kept inputs cover, and whether the compiled build agrees on them.

The fuzzer keeps the inputs that reached new code (libFuzzer's corpus; the
hypothesis engine's new outcomes) beside the seeds and the findings.
``python -m tests.fuzz.replay OUT --coverage`` runs all of them once more on
the Python source under coverage.py and reports the lines and branches
covered, per parser package and for the shared toolkit (the fuzzer's own
instrumentation counts edges, which say little to a reader).
``python -m tests.fuzz.replay OUT`` runs them on the build users run (the
mypyc-compiled parsers, the Rust lanes) through the same oracle: the
coverage-guided run explored the source, this holds the compiled code to the
same checks. Each prints one JSON object.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ["services", "shared/parsing", "shared/codec", "shared/event", "shared/kernel", "shared/kafka/records.py"]
OMIT = ["*/tests/bench/faust_peer/*"]


def inputs(folder: Path) -> list[bytes]:
    """The seeds, the kept corpus and the findings' inputs of one format's folder."""
    found: list[bytes] = []
    for sub in ("seeds", "corpus", "findings"):
        path = folder / sub
        if path.is_dir():
            found.extend(p.read_bytes() for p in sorted(path.iterdir()) if p.is_file() and p.suffix != ".json")
    return found


def replay(out: Path) -> dict[str, Any]:
    from tests.fuzz.oracle import Oracle
    from tests.fuzz.seeds import Target

    results: dict[str, Any] = {}
    for folder in sorted(p for p in out.iterdir() if (p / "target.json").exists()):
        target = Target.load(folder)
        oracle = Oracle(target)
        for data in inputs(folder):
            oracle.check(data)
        tally = oracle.tally.as_json()
        results[target.format_id] = {
            k: tally[k] for k in ("inputs", "crashes", "hangs", "bad_rejects", "codec_errors", "findings")
        }
    return results


def group(path: str) -> str:
    """The report line a source file counts in: its parser package, or its part of ``shared``."""
    parts = Path(path).parts
    if parts[0] == "services":
        return "/".join(parts[:2])
    if parts[1] in ("codec", "event", "kafka"):
        return "shared/codec+event"
    return "/".join(parts[:2])


def covered(report: dict[str, Any]) -> dict[str, Any]:
    sums: dict[str, dict[str, int]] = {}
    for path, data in report["files"].items():
        summary = data["summary"]
        for key in (group(path), "total"):
            line = sums.setdefault(key, {"lines": 0, "lines_covered": 0, "branches": 0, "branches_covered": 0})
            line["lines"] += summary["num_statements"]
            line["lines_covered"] += summary["covered_lines"]
            line["branches"] += summary["num_branches"]
            line["branches_covered"] += summary["covered_branches"]
    for line in sums.values():
        line["lines_pct"] = round(100 * line["lines_covered"] / line["lines"], 1) if line["lines"] else 0  # type: ignore[assignment]
        line["branches_pct"] = round(100 * line["branches_covered"] / line["branches"], 1) if line["branches"] else 0  # type: ignore[assignment]
    return dict(sorted(sums.items()))


def main(argv: list[str]) -> None:
    out = Path(argv[1])
    if "--coverage" not in argv:
        print(json.dumps({"compiled": replay(out)}))
        return
    import coverage

    cov = coverage.Coverage(branch=True, data_file=None, source=[str(ROOT / s) for s in SOURCES], omit=OMIT)
    cov.start()
    from tests.fuzz import pure_source

    pure_source.install()
    results = replay(out)
    cov.stop()
    with tempfile.TemporaryDirectory() as tmp:
        cov.json_report(outfile=f"{tmp}/coverage.json")
        report = json.loads(Path(f"{tmp}/coverage.json").read_text())
    report["files"] = {str(Path(p).resolve().relative_to(ROOT)): d for p, d in report["files"].items()}
    print(json.dumps({"source": results, "coverage": covered(report)}))


if __name__ == "__main__":
    main(sys.argv)
