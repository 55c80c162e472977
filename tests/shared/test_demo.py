"""``make demo``'s code on a smaller workload: every format, the real processes, the lake equal to the truth.

Runs ``shared.cli.demo.run.run`` as ``make demo`` does (its own embedded broker,
one real ``binlake normalizer`` process per format, the real ``binlake sink``
process), with a few hundred changes per format in one table (an ADD COLUMN,
then a TRUNCATE) and without the offline part and ``binlake lake
verify`` (tested on their own:
``tests/shared/test_demo_parts.py``, ``tests/sink/test_lake_cli.py``).
Asserts every source table's mirror equals the generator's ground truth, every
poison message was dead-lettered, the printed DuckDB line answers, and no
process the demo started is left running (nor the broker).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rich.console import Console

from binlake.shared.cli.demo import summary, traffic
from binlake.shared.cli.demo.run import Options, run
from binlake.shared.devbroker import broker

pytestmark = [pytest.mark.integration, pytest.mark.system, pytest.mark.xdist_group("system")]


def test_demo_lands_every_format_in_the_lake_equal_to_the_truth(tmp_path: Path) -> None:
    if not (shutil.which("java") and shutil.which("mvn")):
        pytest.skip("the demo's broker and sink need java and mvn")
    options = Options(out=tmp_path / "demo-out", changes=200, tables=1, offline=False, verify=False, timeout_s=1200)
    with (tmp_path / "console.txt").open("w") as screen:
        outcome = run(options, Console(file=screen, width=160))

    report = outcome.report
    assert report is not None
    assert outcome.problems == [], outcome.problems
    assert outcome.code == 0
    assert sorted(outcome.traffic) == traffic.formats()
    truth_tables = {table for item in outcome.traffic.values() for table in item.truth}
    assert {check.table for check in report.checks} == truth_tables
    for check in report.checks:
        # DRS's unsigned BIGINT ids past 2**63-1 included (its bare "bigint" is DECIMAL(20,0)).
        assert check.equal, (check.table, check.differences)
    # Each table's changelog holds its row changes and schema changes.
    for fmt, item in outcome.traffic.items():
        events = sum(report.changelog[t].events for t in item.truth if t in report.changelog)
        assert events == item.events, fmt
        assert sum(outcome.letters[fmt].values()) == item.poison, fmt
    # The tables were emptied by their TRUNCATE, then filled by later inserts only; their ADD COLUMN before it
    # left the added column in the mirror.
    truncated = [c for item in outcome.traffic.values() for c in item.controls if c.startswith("TRUNCATE")]
    added = [c for item in outcome.traffic.values() for c in item.controls if c.startswith("ADD COLUMN")]
    assert len(truncated) >= 10 and len(added) >= 10

    # No process left: the services (each by its session) and the broker.
    assert outcome.leftovers == []
    assert outcome.stopped and all(code == 0 for code in outcome.stopped.values()), outcome.stopped
    recorded, answering = broker.status(options.out / "broker")
    assert not answering and (recorded is None or not broker.is_alive(recorded.pid))

    # The one-line query the summary prints works, without Spark.
    assert outcome.query is not None
    code, text = summary.run_query_line(outcome.query)
    assert code == 0, text
    first = sorted(next(iter(outcome.traffic.values())).truth)[0]
    rows = len(next(iter(outcome.traffic.values())).truth[first])
    first_cells = [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    assert str(rows) in first_cells, text
