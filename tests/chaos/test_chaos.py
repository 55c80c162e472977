"""The chaos run of ``make chaos``, short: 6,000 changes, 6 SIGKILLs and a broker restart, nothing lost; then
3,000 changes on the 3-node dev cluster with its faults, every recovery path of the runtime taken.

``tests.chaos.run`` in a process of its own (its own broker, which it restarts), over two formats of one
table each (each with a history table): two normalizers per format and the sink, four kills aimed inside
open transactions and two inside sink micro-batches (the first while both of the sink's queries have one
open), every killed process started again. It exits 0 only when the unified topic, the dead letters and the
changelog hold every change exactly once and every mirror and history table equals the generator's rows;
the summary must also show the kills landed where they were aimed. ``binlake lake verify`` (a Spark
application of its own, minutes on a busy machine) is left to ``make chaos``; ``tests/sink/test_lake_cli.py``
tests it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

# make test-system runs it on one worker and the other system tests on the other (about as long together).
pytestmark = [pytest.mark.integration, pytest.mark.system, pytest.mark.xdist_group("chaos")]

REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 1800
# The traffic lasts 120 s (not the default 40 s): each normalizer kill aims at an open transaction, and the
# normalizers, once caught up after the broker's restart, have none to be caught in.
RUN = [
    *("--changes", "6000", "--kills", "6", "--formats", "canal-json,oms-avro", "--traffic-seconds", "120"),
    *("--tables", "1", "--history", "*.t00", "--no-verify"),
]
CLUSTER_RUN = [
    *("--changes", "3000", "--kills", "4", "--formats", "canal-json,oms-avro", "--nodes", "3"),
    *("--tables", "1", "--history", "*.t00", "--no-verify"),
]


def _run(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = tmp_path / "chaos"
    command = [sys.executable, "-m", "tests.chaos.run", *args, "--out", str(out)]
    log = tmp_path / "chaos.log"
    with log.open("wb") as err:
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err)
    try:
        code = process.wait(TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.terminate()  # its cleanup stops the broker and the services it started
            process.wait(180)
    summary = out / "summary.json"
    assert summary.exists(), log.read_text()[-5000:]
    report: dict[str, Any] = json.loads(summary.read_text())
    assert report["passed"], f"{report['problems']}\n{log.read_text()[-5000:]}"
    assert code == 0
    return report


def test_short_chaos_run_loses_and_duplicates_nothing(kafka_bootstrap: str, tmp_path: Path) -> None:
    del kafka_bootstrap  # ensures the environment can run a broker; the run starts (and restarts) its own
    report = _run(tmp_path, *RUN)
    assert (report["kills"], report["broker_restarts"]) == (6, 1)
    assert report["kills_inside_transactions"] >= 1 and report["kills_inside_batches"] >= 1, report
    assert (report["lost"], report["duplicated"]) == (0, 0)
    assert report["events"] == report["events_expected"] >= 6_000  # the changes and the schema changes
    assert report["tables"] == report["tables_matching"] == 2
    assert report["history_tables"] == report["history_matching"] == 2  # each format's table has one
    assert report["lake_verify_exit"] is None  # skipped: `make chaos` runs it, tests/sink/test_lake_cli.py too


def test_short_chaos_run_on_a_cluster_takes_every_recovery_path(kafka_bootstrap: str, tmp_path: Path) -> None:
    """The same on the 3-node dev cluster, with its faults: every recovery path of the runtime is taken."""
    del kafka_bootstrap
    report = _run(tmp_path, *CLUSTER_RUN)
    assert report["kafka_nodes"] == 3
    assert {fault["fault"] for fault in report["cluster_faults"]} == {
        "leader kill",
        "coordinator kill",
        "ISR below the minimum",
        "normalizer started while every node is down",
        "cluster stop and start",
    }
    assert all(report["recovery_paths"].values()), report["recovery_paths"]
    assert report["freezes_inside_transactions"] >= 1
    assert (report["lost"], report["duplicated"]) == (0, 0)
    assert report["events"] == report["events_expected"] >= 3_000
    assert report["tables"] == report["tables_matching"] == 2
