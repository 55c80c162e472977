"""The end of a chaos run: every change exactly once on the topic and in the changelog, every table equal.

- **The unified topic**, read with ``read_committed``: each message the player produced (``Truth``) is
  the origin of exactly one event, and no event has another origin; each poison message is exactly one
  dead letter.
- **The changelog** (read natively, DuckDB): one row per committed event, by Kafka record and by origin.
- **Mirrors** against the generator's final rows, as ``make demo`` checks them
  (``shared.cli.demo.summary.compare_lake``); **history tables**: their current versions the same way,
  and one version per row change of the table (none lost, none twice).
- **``binlake lake verify``**, the real command, against the topic.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlake.shared.cli.demo import summary
from binlake.shared.cli.demo.pipeline import DLQ, UNIFIED
from binlake.shared.cli.demo.truth_check import check_table
from binlake.shared.kafka.records import H_OFFSET, H_PARTITION, H_TOPIC
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.layout import IS_CURRENT, OP
from binlake.spark_sink.settings import SinkSettings
from tests.chaos.truth import Coordinates, Truth
from tests.support import kafka_tools
from tests.support.pipeline import decode


@dataclass
class Tally:
    """One exactly-once count: what was expected against what was found."""

    expected: int = 0
    found: int = 0
    lost: int = 0
    duplicated: int = 0
    unexpected: int = 0

    @classmethod
    def of(cls, expected: set[Coordinates], seen: Counter[Coordinates]) -> Tally:
        return cls(
            expected=len(expected),
            found=sum(seen.values()),
            lost=len(expected - set(seen)),
            duplicated=sum(n - 1 for n in seen.values() if n > 1),
            unexpected=len(set(seen) - expected),
        )

    @property
    def exact(self) -> bool:
        return not (self.lost or self.duplicated or self.unexpected)


@dataclass
class Findings:
    topic: Tally = field(default_factory=Tally)
    dead_letters: Tally = field(default_factory=Tally)
    changelog: Tally = field(default_factory=Tally)
    changelog_records_twice: int = 0
    """Changelog rows beyond one per Kafka record of the unified topic."""
    quarantined: int = 0
    tables: int = 0
    tables_matching: int = 0
    history_tables: int = 0
    history_matching: int = 0
    verify_code: int | None = None
    problems: list[str] = field(default_factory=list)


async def check_topic(bootstrap: str, truth: Truth, findings: Findings) -> None:
    events = decode(await kafka_tools.read_all(bootstrap, UNIFIED))
    seen = Counter((e.origin.topic, e.origin.partition, e.origin.offset) for _, e in events)
    findings.topic = Tally.of(truth.events, seen)
    letters = Counter(_letter_origin(record.headers) for record in await kafka_tools.read_all(bootstrap, DLQ))
    findings.dead_letters = Tally.of(truth.poison, letters)
    for name, tally in (("unified topic", findings.topic), ("dead-letter topic", findings.dead_letters)):
        if not tally.exact:
            findings.problems.append(
                f"{name}: {tally.lost} lost, {tally.duplicated} duplicated, {tally.unexpected} unexpected"
            )


def _letter_origin(headers: Any) -> Coordinates:
    values = {name: value.decode() for name, value in headers}
    return values[H_TOPIC], int(values[H_PARTITION]), int(values[H_OFFSET])


class CurrentVersions(LakeReader):
    """The lake as ``check_table`` reads a mirror, but a table's rows are its current versions (history)."""

    def rows(self, path: Path | str) -> tuple[list[str], list[tuple[Any, ...]]]:
        return self.query(f"SELECT * FROM {self.scan(path)} WHERE {IS_CURRENT}")


def check_lake(lake_path: Path, truth: Truth, history: str, findings: Findings) -> None:
    """The changelog, mirrors and history tables; ``history`` names the tables that must have one (globs)."""
    settings = SinkSettings(lake_uri=str(lake_path), history_tables=history)
    reader = CurrentVersions(settings)
    try:
        _check_changelog(reader, truth, findings)
        report = summary.compare_lake(lake_path, truth.traffic)
        findings.tables = len(report.checks)
        findings.tables_matching = sum(check.equal for check in report.checks)
        for check in report.checks:
            if not check.equal:
                findings.problems.append(f"mirror of {check.table}: {'; '.join(check.differences)}")
        _check_history(reader, truth, settings, findings)
    finally:
        reader.close()


def _check_changelog(reader: LakeReader, truth: Truth, findings: Findings) -> None:
    scan = reader.scan(reader.changelog())
    _, rows = reader.query(f'SELECT origin.topic, origin.partition, origin."offset", count(*) FROM {scan} GROUP BY ALL')
    seen: Counter[Coordinates] = Counter({(topic, int(p), int(o)): int(n) for topic, p, o, n in rows})
    findings.changelog = Tally.of(truth.events, seen)
    findings.changelog_records_twice = int(
        reader.scalar(f"SELECT count(*) - count(DISTINCT (_kafka_partition, _kafka_offset)) FROM {scan}") or 0
    )
    if reader.is_table(reader.quarantine()):
        findings.quarantined = int(reader.scalar(f"SELECT count(*) FROM {reader.scan(reader.quarantine())}") or 0)
    tally = findings.changelog
    if not tally.exact or findings.changelog_records_twice or findings.quarantined:
        findings.problems.append(
            f"changelog: {tally.lost} lost, {tally.duplicated} duplicated, {tally.unexpected} unexpected, "
            f"{findings.changelog_records_twice} Kafka records twice, {findings.quarantined} quarantined"
        )


def _check_history(reader: CurrentVersions, truth: Truth, settings: SinkSettings, findings: Findings) -> None:
    tables = truth.source_tables()
    histories = {entry.source_table: entry.history for entry in reader.source_tables() if entry.history}
    for table in sorted(histories.keys() | {t for t in tables if settings.wants_history(t)}):
        if table not in histories:
            findings.problems.append(f"history of {table}: no history table in the lake")
            continue
        item = truth.traffic[tables[table]]
        findings.history_tables += 1
        check = check_table(reader, histories[table], table, item.truth[table], item.added_columns.get(table, []))
        scan = reader.scan(histories[table])
        versions = int(reader.scalar(f"SELECT count(*) FROM {scan} WHERE {OP} <> 'TRUNCATE'") or 0)
        if versions != truth.row_events(table):
            check.differences.append(f"{versions} versions for {truth.row_events(table)} row changes")
        if check.equal:
            findings.history_matching += 1
        else:
            findings.problems.append(f"history of {table}: {'; '.join(check.differences)}")


def check_verify(lake_path: Path, bootstrap: str, log: Path, findings: Findings) -> None:
    outcome = summary.run_verify(lake_path, bootstrap, UNIFIED, log)
    findings.verify_code = outcome.code
    if outcome.code != 0:
        tail = " | ".join(outcome.lines[-5:])
        findings.problems.append(f"binlake lake verify exited {outcome.code} (log {log}): {tail}")
