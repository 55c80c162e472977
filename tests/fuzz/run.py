"""``make fuzz``: every parser, fuzzed from the golden corpus; a JSON summary.

``python -m tests.fuzz.run [--inputs N] [--formats a,b] [--out DIR]`` splits
``N`` inputs (default 1,000,000) evenly over the formats and fuzzes each in a
process of its own: atheris (libFuzzer, coverage-guided over the parsers'
Python source) where it is installed, else the hypothesis engine. Each input
is held to ``tests.fuzz.oracle``'s checks. Then the kept inputs are replayed
under coverage.py (lines and branches covered) and on the compiled build.

The summary (stdout, and ``DIR/summary.json``) gives per format the inputs,
inputs/s, rejects by code, crashes,
hangs and the other findings, and the coverage. It exits 1 on any finding:
each is in ``DIR/<format>/findings/`` (the input and what went wrong; replay
one with ``python -m tests.fuzz.run --replay FILE --formats FORMAT``). A
crasher, once fixed, becomes a golden case in ``tests/corpus/<format>/``.

``--baseline-write`` / ``--baseline-check`` run the deterministic baseline
instead (``tests.fuzz.baseline``): fixed-seed mutations of the corpus through
the Python codec, each format's outcomes against ``tests/fuzz/baseline.json``
(``--baseline-inputs N`` per format for a short run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_INPUTS = 1_000_000
MAX_RESTARTS = 3
_STATUS = re.compile(r"^#(\d+)\s+\w+\s+cov: (\d+) ft: (\d+) corp: (\d+)")


def engine_name(requested: str) -> str:
    if requested != "auto":
        return requested
    try:
        import atheris  # noqa: F401
    except ImportError:
        return "hypothesis"
    return "atheris"


def child_command(engine: str, folder: Path, runs: int, limit: float, seed: int) -> list[str]:
    module = "tests.fuzz.atheris_child" if engine == "atheris" else "tests.fuzz.hypothesis_engine"
    return [sys.executable, "-m", module, str(folder), str(runs), str(limit), str(seed)]


def fuzz_format(engine: str, folder: Path, runs: int, limit: float, seed: int) -> dict[str, Any]:
    """Fuzz one format's folder for ``runs`` inputs; restart after a hard crash or hang (libFuzzer
    stops at one), at most ``MAX_RESTARTS`` times. Returns the tally with libFuzzer's counters."""
    from tests.fuzz.oracle import Finding, Tally

    tally = Tally(folder.name)
    libfuzzer: dict[str, int] = {}
    wall = time.monotonic()
    left, attempt = runs, 0
    while left > 0 and attempt <= MAX_RESTARTS:
        stats = folder / "stats.json"
        stats.unlink(missing_ok=True)
        log = folder / f"fuzz-{attempt}.log"
        with log.open("wb") as err:
            code = subprocess.call(
                child_command(engine, folder, left, limit, seed + attempt), cwd=ROOT, stdout=err, stderr=err
            )
        done = json.loads(stats.read_text()) if stats.exists() else None
        if done is not None:
            tally.merge(done)
        for line in log.read_text(errors="replace").splitlines():
            match = _STATUS.match(line)
            if match:
                libfuzzer = {"edges": int(match[2]), "features": int(match[3]), "corpus": int(match[4])}
        if code == 0:
            break
        artifacts = sorted((folder / "artifacts").glob("*")) if (folder / "artifacts").exists() else []
        timeout = code == -signal.SIGALRM or any(p.name.startswith(("timeout-", "slow-")) for p in artifacts)
        current = folder / "current"
        data = current.read_bytes() if current.exists() else b""
        finding = Finding(
            "hang" if timeout else "crash",
            f"process exit {code} (see {log.name})",
            log.read_text(errors="replace")[-2000:],
            data,
        )
        tally.note(finding)
        (folder / "findings").mkdir(exist_ok=True)
        (folder / "findings" / finding.name()).write_bytes(data)
        (folder / "findings" / (finding.name() + ".json")).write_text(json.dumps(finding.as_json(), indent=1))
        left -= done["inputs"] if done else 0
        attempt += 1
    summary = tally.as_json()
    summary["wall_seconds"] = round(time.monotonic() - wall, 1)
    if libfuzzer:
        summary["libfuzzer"] = libfuzzer
    return summary


def run_replay(out: Path, coverage: bool) -> dict[str, Any]:
    command = [sys.executable, "-m", "tests.fuzz.replay", str(out)] + (["--coverage"] if coverage else [])
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr[-3000:]}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def problems(summary: dict[str, Any]) -> int:
    count = 0
    for result in summary["formats"].values():
        count += sum(result[k] for k in ("crashes", "hangs", "bad_rejects", "codec_errors"))
    for part in ("source", "compiled"):
        for result in summary.get("replay", {}).get(part, {}).values():
            count += sum(result[k] for k in ("crashes", "hangs", "bad_rejects", "codec_errors"))
    count += len(summary.get("replay", {}).get("errors", {}))  # a replay that could not run
    return count


def replay_one(path: Path, format_id: str) -> None:
    """Run one saved input (a finding) through the oracle and print what it does."""
    from tests.fuzz.oracle import Oracle
    from tests.fuzz.seeds import targets

    oracle = Oracle(targets()[format_id])
    finding = oracle.check(path.read_bytes())
    print(
        json.dumps(
            {
                "last": oracle.last,
                "finding": None if finding is None else finding.as_json(),
                "detail": None if finding is None else finding.detail,
            },
            indent=1,
        )
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--inputs", type=int, default=int(os.environ.get("FUZZ_INPUTS", DEFAULT_INPUTS)))
    parser.add_argument("--formats", default="", help="comma-separated format ids (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "fuzz")
    parser.add_argument("--time-limit", type=float, default=1.0, help="CPU seconds one input may take")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    parser.add_argument("--replay", type=Path, help="run this one saved input and print what it does")
    modes = parser.add_mutually_exclusive_group()
    modes.add_argument("--baseline-write", action="store_true", help="write the deterministic baseline")
    modes.add_argument("--baseline-check", action="store_true", help="check the outcomes against it")
    parser.add_argument("--baseline-inputs", type=int, help="inputs per format (default: the baseline's)")
    parser.add_argument("--baseline-file", type=Path, help="default: tests/fuzz/baseline.json")
    parser.add_argument("--baseline-dump", type=Path, help="also write every input's outcome to this file")
    args = parser.parse_args()

    from binlake.shared.parsing import registry
    from tests.fuzz.seeds import targets

    formats = [f for f in args.formats.split(",") if f] or registry.format_ids()
    if args.replay:
        replay_one(args.replay, formats[0])
        return 0
    if args.baseline_write or args.baseline_check:
        from tests.fuzz import baseline

        return baseline.main(
            write=args.baseline_write,
            formats=formats,
            count=args.baseline_inputs,
            limit_s=args.time_limit,
            out=args.out,
            path=args.baseline_file or baseline.BASELINE,
            dump=args.baseline_dump,
        )
    engine = engine_name(args.engine)
    shutil.rmtree(args.out, ignore_errors=True)
    per_format = {
        f: args.inputs // len(formats) + (1 if i < args.inputs % len(formats) else 0) for i, f in enumerate(formats)
    }
    started = time.monotonic()
    results: dict[str, Any] = {}
    for format_id in formats:
        folder = args.out / format_id
        targets()[format_id].save(folder)
        results[format_id] = fuzz_format(engine, folder, per_format[format_id], args.time_limit, args.seed)
        brief = {k: results[format_id][k] for k in ("inputs", "inputs_per_s", "crashes", "hangs")}
        print(f"{format_id}: {json.dumps(brief)}", file=sys.stderr)
    replay: dict[str, Any] = {}
    coverage_run = run_replay(args.out, coverage=True)
    replay["source"] = coverage_run.get("source", {})
    compiled = run_replay(args.out, coverage=False)
    replay["compiled"] = compiled.get("compiled", {})
    replay["errors"] = {
        name: run["error"] for name, run in (("source", coverage_run), ("compiled", compiled)) if "error" in run
    }
    total = sum(r["inputs"] for r in results.values())
    seconds = sum(r["seconds"] for r in results.values())
    summary: dict[str, Any] = {
        "engine": engine,
        "inputs": total,
        "inputs_per_s": round(total / seconds) if seconds else None,
        "wall_seconds": round(time.monotonic() - started, 1),
        "time_limit_s": args.time_limit,
        "formats": results,
        "coverage": coverage_run.get("coverage", {}),
        "replay": replay,
    }
    summary["problems"] = problems(summary)
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))
    return 1 if summary["problems"] else 0


if __name__ == "__main__":
    sys.exit(main())
