"""``make demo``: the whole main job on one machine, live, checked against the ground truth.

Phases (each timed):

1. offline: every format's corpus samples through ``binlake normalize``;
2. an embedded Apache Kafka broker (``binlake dev broker``) on free ports, in
   ``<out>/broker``;
3. traffic in every vendor format (``traffic``: changes, one ADD COLUMN and one
   TRUNCATE where the format carries them, poison), while the real services
   start: one ``binlake normalizer`` process per format and one ``binlake sink``
   process writing ``<out>/lake`` (a lake left by an earlier demo is removed
   first: the broker, its topics and so the sink's offsets are new);
4. live progress from the services' ``/metrics`` until the normalizers, the
   changelog and the mirrors have caught up (``pipeline``);
5. every service stopped by pid (SIGTERM), the lake compared with the ground
   truth, ``binlake lake verify`` run against the topic, the broker stopped;
6. the summary: per source table mirror rows, changelog events and equality
   with the truth; dead letters by reason; verify's exit status; where the
   tables are and a one-line query that needs no Spark.

Every process is stopped also on Ctrl-C, SIGTERM or a failure; the lake stays.
Exit status 0 only when every table equals the truth, every poison message
was dead-lettered, verify found the lake equal to the topic and no process
was left running.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType

from rich.console import Console

from binlake.shared.cli.demo import offline, summary
from binlake.shared.cli.demo import traffic as traffic_module
from binlake.shared.cli.demo.fleet import Fleet
from binlake.shared.cli.demo.pipeline import UNIFIED, Abort, Clock, Pipeline, dead_letters
from binlake.shared.cli.demo.progress import Progress
from binlake.shared.cli.demo.traffic import Traffic
from binlake.shared.devbroker import broker
from binlake.shared.errors import BinlakeError

REPO = Path(__file__).resolve().parents[3]


@dataclass
class Options:
    out: Path = REPO / "demo-out"
    formats: list[str] = field(default_factory=traffic_module.formats)
    changes: int = 2000
    tables: int = 3
    seed: int = 1
    offline: bool = True
    verify: bool = True
    timeout_s: float = 1200.0


@dataclass
class Outcome:
    """What the demo found; ``code`` is its exit status."""

    code: int = 1
    problems: list[str] = field(default_factory=list)
    phases: list[tuple[str, float]] = field(default_factory=list)
    report: summary.LakeReport | None = None
    letters: dict[str, Counter[str]] = field(default_factory=dict)
    verify: summary.VerifyOutcome | None = None
    leftovers: list[int] = field(default_factory=list)
    query: str | None = None
    stopped: dict[str, int | None] = field(default_factory=dict)
    traffic: dict[str, Traffic] = field(default_factory=dict)


def parse_args(argv: list[str] | None) -> Options:
    parser = argparse.ArgumentParser(prog="python -m binlake.shared.cli.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Options.out, help="output folder (default demo-out/)")
    parser.add_argument("--changes", type=int, default=Options.changes, help="changes per format (default 2000)")
    parser.add_argument("--tables", type=int, default=Options.tables, help="tables per format (default 3)")
    parser.add_argument("--formats", help="comma-separated format ids (default: every renderable format)")
    parser.add_argument("--skip-offline", action="store_true", help="skip the offline corpus part")
    parser.add_argument("--timeout", type=float, default=Options.timeout_s, help="seconds to wait for catching up")
    args = parser.parse_args(argv)
    formats = traffic_module.formats() if not args.formats else [f.strip() for f in args.formats.split(",")]
    return Options(
        out=args.out.resolve(),
        formats=formats,
        changes=args.changes,
        tables=args.tables,
        offline=not args.skip_offline,
        timeout_s=args.timeout,
    )


@contextmanager
def _signals_stop_the_demo() -> Iterator[None]:
    """SIGTERM acts as Ctrl-C (KeyboardInterrupt), so the cleanup runs for both."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run(options: Options, console: Console) -> Outcome:
    outcome = Outcome()
    clock = Clock()
    options.out.mkdir(parents=True, exist_ok=True)
    fleet = Fleet(options.out / "logs")
    broker_dir = options.out / "broker"
    broker_up = False
    broker_pid: int | None = None
    try:
        with _signals_stop_the_demo():
            kafka = bool(shutil.which("java") and shutil.which("mvn"))
            lake = options.out / "lake"
            if kafka and lake.exists():
                shutil.rmtree(lake)
                where = summary.relative(lake)
                console.print(f"removed the previous demo's lake {where} (this run's broker and topics are new)")
            with ThreadPoolExecutor(1) as pool:
                # The offline part runs while the broker starts (a JVM that mostly waits on itself).
                corpus = pool.submit(offline.run, options.out / "offline") if options.offline else None
                info = None
                if kafka:
                    console.print("starting the embedded Kafka broker (binlake dev broker)...")
                    broker_up = True  # from here on the cleanup stops whatever was recorded
                    info = broker.start(broker_dir, timeout_s=120)
                if corpus is not None:
                    console.print(summary.offline_table(corpus.result()))
            clock.lap(("offline corpus, " if options.offline else "") + "broker started")
            if info is None:
                console.print("(skipping the Kafka part: it needs java and mvn on PATH)")
                outcome.code = 0
                return outcome
            broker_pid = info.pid
            logs = summary.relative(fleet.logs)
            console.print(f"broker at {info.bootstrap} (Kafka {info.kafka_version}); services' logs in {logs}/")

            def make_traffic() -> dict[str, Traffic]:
                outcome.traffic = {}
                for i, fmt in enumerate(options.formats):
                    outcome.traffic[fmt] = traffic_module.build(
                        fmt, changes=options.changes, tables=options.tables, seed=options.seed + i
                    )
                return outcome.traffic

            progress = Progress(console)
            pipeline = Pipeline(info.bootstrap, options.out, fleet, progress, clock, options.timeout_s)
            result = asyncio.run(pipeline.run(options.formats, make_traffic))
            traffic = outcome.traffic
            outcome.stopped = result.stopped
            outcome.letters = dead_letters(result)
            outcome.report = summary.compare_lake(lake, traffic)
            clock.lap("lake compared with the ground truth (native reader)")
            if options.verify:
                console.print("running binlake lake verify against binlake.events (Spark)...")
                outcome.verify = summary.run_verify(lake, info.bootstrap, UNIFIED, fleet.logs / "lake-verify.log")
                clock.lap("binlake lake verify")
            broker.stop(broker_dir)
            broker_up = False
            clock.lap("broker stopped")
            outcome.query = _query(lake, traffic)
            _judge(outcome, traffic)
    except KeyboardInterrupt:
        outcome.problems.append("interrupted (Ctrl-C or SIGTERM): the services were stopped, the lake left as it was")
    except (Abort, BinlakeError) as exc:
        outcome.problems.append(str(exc))
    finally:
        # A second Ctrl-C or SIGTERM (a supervisor's `timeout` repeats it) must not cut the cleanup short.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        previous_term = signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            stopped = fleet.stop_all(grace_s=30.0)
            outcome.stopped = outcome.stopped or stopped
            if broker_up:
                broker.stop(broker_dir)
            outcome.leftovers = fleet.leftovers()
            if broker_pid is not None and broker.is_alive(broker_pid):
                outcome.leftovers.append(broker_pid)
        finally:
            signal.signal(signal.SIGINT, previous)
            signal.signal(signal.SIGTERM, previous_term)
        outcome.phases = clock.phases
        outcome.phases.append(("total", clock.elapsed()))
    if outcome.leftovers:
        outcome.problems.append(f"processes left running: {outcome.leftovers}")
    outcome.code = 1 if outcome.problems else 0  # a run that found nothing wrong passes
    return outcome


def _query(lake: Path, traffic: dict[str, Traffic]) -> str:
    first = next(iter(traffic.values()))
    table = sorted(first.truth)[0]
    return summary.query_line(lake, table)


def _judge(outcome: Outcome, traffic: dict[str, Traffic]) -> None:
    report = outcome.report
    if report is not None and not report.equal:
        differ = [c.table for c in report.checks if not c.equal]
        outcome.problems.append(f"{len(differ)} table(s) differ from the ground truth: {', '.join(differ)}")
    for fmt, item in traffic.items():
        letters = sum(outcome.letters.get(fmt, Counter()).values())
        if letters != item.poison:
            outcome.problems.append(f"{fmt}: {letters} dead letters for {item.poison} poison messages")
    if outcome.verify is not None and outcome.verify.code != 0:
        outcome.problems.append(f"binlake lake verify exited {outcome.verify.code} (log: {outcome.verify.log})")
    bad_stops = {name: code for name, code in outcome.stopped.items() if code not in (0, None)}
    if bad_stops:
        outcome.problems.append(f"services that did not stop cleanly (exit codes): {bad_stops}")


def print_summary(console: Console, options: Options, outcome: Outcome) -> None:
    report = outcome.report
    if report is not None:
        console.print(summary.tables_table(report))
        summary.print_differences(console, report)
    if outcome.letters:
        console.print(summary.dead_letter_table(outcome.traffic, outcome.letters))
    verify = outcome.verify
    if verify is not None:
        console.print(f"binlake lake verify: exit status {verify.code}", highlight=False)
        for line in verify.lines[-5:]:
            console.print(f"  {line}", highlight=False)
    if report is not None:
        lake = summary.relative(options.out / "lake")
        console.print(
            f"the Delta tables: {lake}/changelog, {lake}/mirror/<db.table>, {lake}/deleted_keys",
            highlight=False,
        )
        console.print(f"  list them: .venv/bin/binlake lake show --lake {lake}   (no Spark)", highlight=False)
    if outcome.query is not None:
        console.print("  query one without Spark (DuckDB's delta_scan):", highlight=False)
        console.print(f"  {outcome.query}", highlight=False, soft_wrap=True)
        code, text = summary.run_query_line(outcome.query)
        for line in text.splitlines():
            console.print(f"    {line}", highlight=False)
        if code != 0:
            outcome.problems.append(f"the query line failed (exit {code})")
            outcome.code = 1
    total = outcome.phases[-1][1] if outcome.phases else 0.0
    console.print(summary.phases_table(outcome.phases[:-1], total))
    if outcome.problems:
        for problem in outcome.problems:
            console.print(f"[bold red]demo FAILED:[/] {problem}", highlight=False)
    else:
        console.print("[bold green]demo passed:[/] every table equals the ground truth", highlight=False)


def main(argv: list[str] | None = None) -> int:
    options = parse_args(argv)
    console = Console(highlight=False)
    if not console.is_terminal:
        console.width = max(console.width, 130)  # a pipe or a log: no terminal to fit, keep table rows whole
    outcome = run(options, console)
    print_summary(console, options, outcome)
    return outcome.code


if __name__ == "__main__":
    sys.exit(main())
