"""``make bench``: every benchmark, one JSON document on stdout and in ``bench/results/<UTC time>.json``.

Speed and memory targets live here, not in timed tests. Each section reports
its measurements next to its target so a reader sees both. The saved files are
the benchmarks' history (``bench/README.md`` explains each figure).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from tests.bench import growth, kafka_bench, normalize_bench, sink_bench

ROOT: Final = Path(__file__).resolve().parents[2]
RESULTS: Final = ROOT / "bench" / "results"
"""Where ``make bench`` keeps each run's report."""
STAMP: Final = "%Y-%m-%dT%H%M%SZ"
"""A results file's name: its UTC time (no colons: valid on every file system; names sort by time)."""


def _commit() -> str | None:
    """The checked-out commit (``+dirty`` when the tree has changes), or None outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        changes = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("+dirty" if changes else "")


def write_results(report: dict[str, Any], folder: Path = RESULTS, now: dt.datetime | None = None) -> Path:
    """Save ``report`` as ``folder/<UTC time>.json`` (the folder made if missing) and return the path.

    Never overwrites: a second report within the same second gets ``-2``, ``-3``... after the time.
    """
    at = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC)
    folder.mkdir(parents=True, exist_ok=True)
    stem = at.strftime(STAMP)
    text = json.dumps(report, indent=2) + "\n"
    for n in range(1, 1000):
        path = folder / (stem + ("" if n == 1 else f"-{n}") + ".json")
        try:
            with path.open("x", encoding="utf-8") as out:
                out.write(text)
        except FileExistsError:
            continue
        return path
    raise FileExistsError(f"no free results file name for {stem} in {folder}")


def _kafka(events: int, rounds: int) -> dict[str, Any]:
    """Kafka -> runtime -> Kafka on a broker of its own (needs java and mvn)."""
    import contextlib
    import shutil
    import tempfile
    from pathlib import Path

    from binlake.shared.devbroker import broker

    if not (shutil.which("java") and shutil.which("mvn")):
        return {"skipped": "the Kafka benchmark needs java and mvn on PATH"}
    with tempfile.TemporaryDirectory(prefix="bench-broker-") as run_dir:
        info = broker.start(Path(run_dir), timeout_s=120)
        try:
            return kafka_bench.run(info.bootstrap, kafka_bench.DEFAULT_FORMATS, events, rounds)
        finally:
            with contextlib.suppress(broker.BrokerError):
                broker.stop(Path(run_dir))


def _spark_sink() -> dict[str, Any]:
    """The Spark sink vs a bare Spark Kafka -> Delta copy, and its freshness, on a broker of its own."""
    import contextlib
    import shutil
    import tempfile
    from pathlib import Path

    from binlake.shared.devbroker import broker

    if not (shutil.which("java") and shutil.which("mvn")):
        return {"skipped": "the Spark sink benchmark needs java and mvn on PATH"}
    with tempfile.TemporaryDirectory(prefix="bench-sink-broker-") as run_dir:
        info = broker.start(Path(run_dir), timeout_s=120)
        try:
            return sink_bench.run(info.bootstrap)
        finally:
            with contextlib.suppress(broker.BrokerError):
                broker.stop(Path(run_dir))


def main() -> int:
    started = dt.datetime.now(dt.UTC)
    report: dict[str, Any] = {
        "run": {"utc": started.strftime("%Y-%m-%dT%H:%M:%SZ"), "commit": _commit()},
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "normalize_canal_json": normalize_bench.run(),
        "kafka_normalizer": _kafka(
            int(os.environ.get("BINLAKE_BENCH_EVENTS", "60000")), int(os.environ.get("BINLAKE_BENCH_ROUNDS", "3"))
        ),
        "spark_sink": _spark_sink(),
    }
    # How cost grows (tests/bench/growth.py); its tables series is the spark_sink section's scale part.
    report["growth"] = growth.section(report["spark_sink"].get("scale"))
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    path = write_results(report, now=started)
    print(f"saved {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
