"""``make bench``: every benchmark, one JSON document on stdout.

Speed and memory targets live here, not in timed tests. Each section reports
its measurements next to its target so a reader sees both.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from typing import Any

from tests.bench import kafka_bench, normalize_bench, sink_bench


def _kafka(events: int, rounds: int) -> dict[str, Any]:
    """Kafka -> runtime -> Kafka on a broker of its own (needs java and mvn)."""
    import contextlib
    import shutil
    import tempfile
    from pathlib import Path

    from shared.devbroker import broker

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

    from shared.devbroker import broker

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
    report: dict[str, Any] = {
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "normalize_canal_json": normalize_bench.run(),
        "kafka_normalizer": _kafka(
            int(os.environ.get("BINLAKE_BENCH_EVENTS", "60000")), int(os.environ.get("BINLAKE_BENCH_ROUNDS", "3"))
        ),
        "spark_sink": _spark_sink(),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
