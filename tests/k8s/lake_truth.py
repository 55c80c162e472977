"""The lake of the cluster's sink against the generator's ground truth, read on the node without Spark.

`binlake generate` is deterministic for its seed: the truth of a Job's traffic is the same workload played
here (the source tables' final state). The sink's volume is a folder of the run on this machine
(test_k8s_chart.py's PersistentVolume), so its mirrors are read where they lie, with the native reader
`binlake lake show` uses, and compared row for row as `make demo` compares them (shared/cli/demo/truth_check.py).
"""

from __future__ import annotations

from pathlib import Path

from binlake.shared.cli.demo.truth_check import check_table
from binlake.shared.cli.generate import messages
from binlake.shared.event.values import Image
from binlake.shared.generate.workload import Workload
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.settings import SinkSettings


def truth(database: str, events: int, *, seed: int = 1, tables: int = 3) -> dict[str, dict[int, Image]]:
    """Every source table's final state after ``binlake generate --database D --events N`` (its defaults)."""
    workload = Workload(seed=seed, tables=tables, database=database)
    messages("canal-json", workload, events, "UTC")  # plays the changes into workload.state
    return {
        f"{database}.{table}": {int(k): dict(row) for k, row in rows.items()} for table, rows in workload.state.items()
    }


def differences(lake_path: Path, expected: dict[str, dict[int, Image]]) -> list[str]:
    """What differs between the lake's mirrors and ``expected``; empty when every table is equal."""
    if not lake_path.exists():
        return [f"no lake at {lake_path}"]
    lake = LakeReader(SinkSettings(lake_uri=str(lake_path)))
    try:
        mirrors = {entry.source_table: entry.mirror for entry in lake.source_tables()}
        found = []
        for table, rows in sorted(expected.items()):
            check = check_table(lake, mirrors.get(table), table, rows, [])
            if not check.equal:
                found.append(f"{table}: {check.mirror_rows} rows, truth {check.truth_rows}: {check.differences}")
        return found
    finally:
        lake.close()
