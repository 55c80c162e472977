"""Offline normalizer throughput: ``binlake normalize`` against a stdlib JSON baseline.

The workload is typical Canal flat traffic: one row per message, 12 columns of
common MySQL types, 10% updates carrying a partial ``old``. Measured on one
core (the CLI is single-threaded):

- ``cli_events_per_s``: the real command, ``binlake normalize --format
  canal-json FILE > /dev/null``, wall time including interpreter start-up;
- ``inproc_events_per_s``: the command's work in a loop, no I/O: the service's
  codec and the JSON view of each record it makes;
- ``stdlib_lines_per_s``: ``json.loads`` + ``json.dumps`` of each line, the
  floor any JSON-to-JSON tool pays;
- ``ratio_vs_stdlib``: baseline time / binlake time (1.0 = as fast; the target is >= 1.2).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from binlake.shared.cli.normalize import json_line
from binlake.shared.normalize import Codec, Normalized, codec_for
from binlake.shared.parsing.context import ParseContext

TYPES = {
    "id": "bigint(20) unsigned",
    "name": "varchar(64)",
    "amount": "decimal(12,2)",
    "created_at": "datetime",
    "updated_at": "timestamp",
    "status": "tinyint(4)",
    "email": "varchar(128)",
    "score": "double",
    "qty": "int(11)",
    "note": "text",
    "is_active": "tinyint(1)",
    "birthday": "date",
}
JDBC = {"id": -5, "name": 12, "amount": 3, "created_at": 93, "updated_at": 93, "status": -6, "email": 12}
JDBC |= {"score": 8, "qty": 4, "note": -1, "is_active": -6, "birthday": 91}


def _row(rng: random.Random, key: int) -> dict[str, Any]:
    return {
        "id": str(key),
        "name": f"customer-{rng.randrange(10**6)}",
        "amount": f"{rng.randrange(10**8)}.{rng.randrange(100):02d}",
        "created_at": f"2024-0{rng.randrange(1, 10)}-1{rng.randrange(10)} 1{rng.randrange(10)}:2{rng.randrange(10)}:00",
        "updated_at": f"2024-10-1{rng.randrange(10)} 0{rng.randrange(10)}:1{rng.randrange(10)}:3{rng.randrange(10)}",
        "status": str(rng.randrange(5)),
        "email": f"user{rng.randrange(10**6)}@example.com",
        "score": repr(rng.random() * 100),
        "qty": str(rng.randrange(1000)),
        "note": None if rng.random() < 0.3 else "some free text " * rng.randrange(1, 4),
        "is_active": str(rng.randrange(2)),
        "birthday": f"19{rng.randrange(50, 99)}-0{rng.randrange(1, 10)}-2{rng.randrange(8)}",
    }


def canal_lines(count: int, seed: int = 7) -> list[bytes]:
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        row = _row(rng, i + 1)
        update = rng.random() < 0.1
        message = {
            "data": [row],
            "database": "shop",
            "es": 1700000000000 + i,
            "id": 1000 + i,
            "isDdl": False,
            "mysqlType": TYPES,
            "old": [{"name": "previous", "qty": "1"}] if update else None,
            "pkNames": ["id"],
            "sql": "",
            "sqlType": JDBC,
            "table": "customers",
            "ts": 1700000000100 + i,
            "type": "UPDATE" if update else "INSERT",
        }
        lines.append(json.dumps(message, ensure_ascii=False).encode())
    return lines


def _best_of(runs: int, fn: Any) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def run(count: int = 200_000) -> dict[str, Any]:
    lines = canal_lines(count)
    codec = codec_for("canal-json", ParseContext(topic="bench"))
    render = json_line()

    def loop(codec: Codec) -> Callable[[], None]:
        def binlake_loop() -> None:
            for number, line in enumerate(lines):
                normalized = codec(line, "bench", 0, number)
                assert isinstance(normalized, Normalized)
                for _, _, _, values in normalized.rows:
                    for i in range(1, len(values), 2):
                        render(values[i])

        return binlake_loop

    def stdlib_loop() -> None:
        for line in lines:
            json.dumps(json.loads(line))

    inproc = _best_of(3, loop(codec))
    baseline = _best_of(3, stdlib_loop)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "canal.jsonl"
        path.write_bytes(b"\n".join(lines) + b"\n")
        cmd = [sys.executable, "-m", "binlake.shared.cli.main", "normalize", "--format", "canal-json", str(path)]

        def cli() -> None:
            with open(os.devnull, "wb") as sink:
                subprocess.run(cmd, stdout=sink, stderr=subprocess.DEVNULL, check=True)

        cli_time = _best_of(3, cli)
    return {
        "events": count,
        "columns_per_row": len(TYPES),
        "cli_events_per_s": round(count / cli_time),
        "inproc_events_per_s": round(count / inproc),
        "stdlib_lines_per_s": round(count / baseline),
        "ratio_vs_stdlib": round(baseline / inproc, 3),
        "cli_ratio_vs_stdlib": round(baseline / cli_time, 3),
        "target_events_per_s": 50_000,
        "target_ratio_vs_stdlib": 1.0,
    }
