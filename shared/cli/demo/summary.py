"""The demo's end: compare the lake with the ground truth, run ``binlake lake verify``, print the summary.

Every table the summary shows is read the way a user would: the mirrors and
the changelog with the native reader ``binlake lake show`` uses
(``spark_sink.lake.native``), the check against the topic with the real
``binlake lake verify`` process (its exit status shown), and a one-line DuckDB
query that is run once here so the printed line is known to work.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

from binlake.shared.cli.demo.offline import OfflineResult
from binlake.shared.cli.demo.traffic import Traffic
from binlake.shared.cli.demo.truth_check import TableCheck, check_table
from binlake.spark_sink.lake.native import LakeReader, SourceStats, duckdb_extensions
from binlake.spark_sink.settings import SinkSettings


@dataclass(slots=True)
class LakeReport:
    checks: list[TableCheck]
    changelog: dict[str, SourceStats]
    formats: dict[str, str] = field(default_factory=dict)
    """Source table -> the format that fed it."""

    @property
    def equal(self) -> bool:
        return all(check.equal for check in self.checks)


def compare_lake(lake_path: Path, traffic: dict[str, Traffic]) -> LakeReport:
    """Every source table of the traffic: its mirror against the truth, its changelog events."""
    lake = LakeReader(SinkSettings(lake_uri=str(lake_path)))
    try:
        entries = {entry.source_table: entry for entry in lake.source_tables()}
        changelog = lake.changelog_stats()
        report = LakeReport([], changelog)
        for fmt, item in traffic.items():
            for table, rows in sorted(item.truth.items()):
                entry = entries.get(table)
                mirror = entry.mirror if entry is not None else None
                report.checks.append(check_table(lake, mirror, table, rows, item.added_columns.get(table, [])))
                report.formats[table] = fmt
        return report
    finally:
        lake.close()


@dataclass(slots=True)
class VerifyOutcome:
    code: int | None
    """``binlake lake verify``'s exit status (None: not run)."""
    lines: list[str]
    log: Path | None = None


def run_verify(lake_path: Path, bootstrap: str, topic: str, log: Path) -> VerifyOutcome:
    """The real ``binlake lake verify`` against the topic; its stdout kept, its stderr in ``log``."""
    command = [sys.executable, "-m", "binlake.shared.cli.main", "lake", "verify", "--lake", str(lake_path)]
    command += ["--topic", topic, "--bootstrap-servers", bootstrap, "--master", "local[2]"]
    env = {
        **os.environ,
        "BINLAKE_SINK_SHUFFLE_PARTITIONS": "2",
        "BINLAKE_SINK_LOG_LEVEL": "ERROR",
        "BINLAKE_SINK_SPARK_CONF": '{"spark.default.parallelism": "2", "spark.sql.adaptive.enabled": "false"}',
    }
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "wb") as err:
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=err, env=env, check=False)
    return VerifyOutcome(done.returncode, done.stdout.decode("utf-8", errors="replace").splitlines(), log)


def query_line(lake_path: Path, table_dir: str) -> str:
    """A one-line DuckDB query of a mirror, no Spark (paths relative to the current folder where they can be).

    The connection is kept in a name: a relation whose connection was garbage-collected cannot print.
    """
    extensions = relative(Path(duckdb_extensions()))
    mirror = relative(lake_path / "mirror" / table_dir)
    sql = f"SELECT count(*) AS rows, max(price) AS top_price FROM delta_scan(\\'{mirror}\\')"
    code = f"import duckdb; c = duckdb.connect(config={{'extension_directory': '{extensions}'}}); print(c.sql('{sql}'))"
    return f'{relative(Path(sys.executable))} -c "{code}"'


def relative(path: Path) -> str:
    """``path`` relative to the current folder when it is below it (symbolic links kept: the venv's python)."""
    absolute = Path(os.path.abspath(path))
    try:
        return str(absolute.relative_to(Path(os.path.abspath(Path.cwd()))))
    except ValueError:
        return str(absolute)


def run_query_line(line: str) -> tuple[int, str]:
    done = subprocess.run(line, shell=True, capture_output=True, text=True, check=False)  # the line printed
    return done.returncode, (done.stdout + done.stderr).rstrip()


# ---------------------------------------------------------------- printing


def offline_table(results: list[OfflineResult]) -> Table:
    table = Table(title="offline: tests/corpus through binlake normalize (demo-out/offline/)", title_justify="left")
    for header in ("format", "messages", "events", "rejected", "control"):
        table.add_column(header, justify="left" if header == "format" else "right")
    for r in results:
        table.add_row(r.format_id, str(r.messages), str(r.events), str(r.rejected), str(r.control))
    return table


def tables_table(report: LakeReport) -> Table:
    table = Table(title="lake vs ground truth, per source table", title_justify="left")
    for header in ("source table", "mirror rows", "changelog events", "truth rows", "equals truth"):
        table.add_column(header, justify="left" if header in ("source table", "equals truth") else "right")
    for check in report.checks:
        events = report.changelog.get(check.table)
        table.add_row(
            check.table,
            "-" if check.mirror_rows is None else str(check.mirror_rows),
            "0" if events is None else str(events.events),
            str(check.truth_rows),
            "yes" if check.equal else "[bold red]NO[/]",
        )
    return table


def dead_letter_table(traffic: dict[str, Traffic], letters: dict[str, Counter[str]]) -> Table:
    table = Table(title="dead letters (binlake.dlq), per format", title_justify="left")
    for header in ("format", "poison sent", "dead letters", "by reason", "schema changes sent"):
        table.add_column(header, justify="right" if header in ("poison sent", "dead letters") else "left")
    for fmt, item in traffic.items():
        counts = letters.get(fmt, Counter())
        reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items())) or "-"
        total = sum(counts.values())
        style = "" if total == item.poison else "[bold red]"
        table.add_row(
            fmt, str(item.poison), f"{style}{total}", reasons, ", ".join(c.split()[0] for c in item.controls) or "-"
        )
    return table


def phases_table(phases: list[tuple[str, float]], total: float) -> Table:
    table = Table(title="time per phase", title_justify="left")
    table.add_column("phase")
    table.add_column("took", justify="right")
    for name, took in phases:
        table.add_row(name, f"{took:.1f} s")
    table.add_row("[bold]total", f"[bold]{total:.1f} s")
    return table


def print_differences(console: Console, report: LakeReport) -> None:
    for check in report.checks:
        for difference in check.differences:
            console.print(f"  {check.table}: {difference}", highlight=False)
