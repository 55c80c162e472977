"""What the sink's sustained run measures besides the changelog's freshness (``sink_bench.freshness``).

- **Current-state reads** (``CurrentReader``): a thread of the bench's Spark session reads the current
  state of every table with ``current_state.current_tables`` (the mirror combined with the fold of the
  changelog's tail, merge on read), ``pause_s`` after the previous read ended (a dashboard refreshing),
  while the sink runs. An event is visible to current-state readers once a read that started after its
  changelog commit has ended: its current-state freshness is that end minus its ``ts_ms``
  (``read_freshness``).
- **The ground truth** (``truth_mismatches``): at the end, every table's
  current state holds exactly the keys the generator's tables hold.
- **Memory** (``RssSampler``): the resident set of the bench process and its
  children (the Spark driver's JVM), sampled every second.
- **The mirrors apart** (``MirrorProcess``, ``BINLAKE_BENCH_SINK_MIRRORS_APART=1``):
  the mirror query runs as its own ``binlake sink`` process
  (``BINLAKE_SINK_QUERIES=mirrors``) at nice 10, the bench's session runs the
  changelog query alone; the mirrors' freshness is then polled from that
  process' ``/metrics`` (``MirrorPoller``, ``mirror_freshness``).
- **The reads apart** (``ReaderProcess``, ``BINLAKE_BENCH_SINK_READS_APART=1``): the
  same reads from a Spark application of their own at nice 10 (``current_reads``).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from binlake.shared.devbroker.broker import free_port
from binlake.shared.generate.workload import Workload
from tests.support.signal_probe import binlake_command
from tests.support.sink_process import sink_env

PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        children = task / "children"
        if children.exists():
            found += [int(p) for p in children.read_text().split()]
    return found


def tree_rss_bytes(pid: int) -> int:
    """Resident bytes of process ``pid`` and all its descendants (Linux ``/proc``)."""
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        try:
            total += int(Path(f"/proc/{current}/statm").read_text().split()[1]) * PAGE_BYTES
            todo += _children(current)
        except (OSError, ValueError, IndexError):
            continue  # the process ended meanwhile
    return total


@dataclass(frozen=True, slots=True)
class MachineCpu:
    """The whole machine's CPU time so far (``/proc/stat``), in seconds summed over cores: every process counts,
    the broker's and the producer's too, as they share the cores with the query measured."""

    busy_s: float
    total_s: float

    @staticmethod
    def now() -> MachineCpu:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
        ticks = os.sysconf("SC_CLK_TCK")
        idle = fields[3] + fields[4]  # idle, iowait
        return MachineCpu((sum(fields) - idle) / ticks, sum(fields) / ticks)

    def since(self, start: MachineCpu, events: int) -> dict[str, Any]:
        """What the machine spent between ``start`` and this: busy core-seconds, the share of all cores busy,
        and busy CPU milliseconds per event of ``events``."""
        busy, total = self.busy_s - start.busy_s, self.total_s - start.total_s
        return {
            "busy_core_s": round(busy, 1),
            "busy_share": round(busy / total, 3) if total else None,
            "cpu_ms_per_event": round(busy * 1000 / events, 4) if events else None,
        }


def read_in_full(frame: Any) -> int:
    """Read every column of every row of a current state (a hash of each row, combined: a count alone would let
    Spark skip computing the columns); return the number of rows."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType

    if not frame.columns:
        return 0  # a table the changelog does not name yet: an empty frame without columns
    # Spark refuses to hash a map (the same map may hash two ways): a map column is hashed as its JSON text.
    columns = [F.to_json(frame[f.name]) if isinstance(f.dataType, MapType) else frame[f.name] for f in frame.schema]
    row = frame.select(F.xxhash64(*columns).alias("h")).agg(F.count("*"), F.bit_xor("h")).first()
    return int(row[0])


@dataclass
class RssSampler:
    """Samples ``tree_rss_bytes`` of this process every ``every_s`` seconds from a thread of its own."""

    every_s: float = 1.0
    samples: list[int] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-rss", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            self.samples.append(tree_rss_bytes(os.getpid()))

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        mib = sorted(s / 2**20 for s in self.samples)
        return {
            "samples": len(mib),
            "max_mib": round(mib[-1]) if mib else None,
            "median_mib": round(mib[len(mib) // 2]) if mib else None,
        }


@dataclass
class MirrorProcess:
    """``binlake sink`` running the mirror query alone (``queries=mirrors``) on the sink's lake, at nice 10."""

    settings: Any
    bootstrap: str
    nice: int = 10
    log: Path | None = None
    port: int = field(default_factory=free_port)
    """Its metrics port (``MirrorPoller`` polls it)."""
    peak_rss_mib: int | None = None
    """Its peak resident memory (``VmHWM``), read as it is stopped."""
    _process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = sink_env(
            self.settings,
            self.bootstrap,
            BINLAKE_SINK_QUERIES="mirrors",
            BINLAKE_SINK_MIRROR_TRIGGER_INTERVAL_S=str(self.settings.mirror_trigger_interval_s),
            BINLAKE_SINK_METRICS_PORT=str(self.port),
        )
        self.log = Path(tempfile.mkstemp(prefix="bench-mirrors-", suffix=".log")[1])
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(
                ["nice", "-n", str(self.nice), *binlake_command("sink")], env=env, stdout=out, stderr=subprocess.STDOUT
            )

    def stop(self) -> None:
        if self._process is None:
            return
        self.peak_rss_mib = _peak_rss_mib(self._process.pid)
        self._process.send_signal(signal.SIGTERM)
        try:
            status = self._process.wait(120)
        except subprocess.TimeoutExpired:
            self._process.kill()
            status = self._process.wait()
        if status != 0:
            tail = "" if self.log is None else self.log.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"the mirrors process ended with status {status}:\n{tail}")


@dataclass
class CurrentReader:
    """Reads the current state of ``tables`` in full with Spark (``current_state.current_tables``), ``pause_s``
    after the previous read, until stopped."""

    spark: Any
    settings: Any
    tables: list[str]
    pause_s: float = 5.0
    reads: list[tuple[float, float, int]] = field(default_factory=list)
    """(wall time started, wall time ended, rows) per completed read."""
    error: BaseException | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-current-reader", daemon=True)
        self._thread.start()

    def read_once(self) -> dict[str, Any]:
        from binlake.spark_sink.mirror import current_state

        return current_state.current_tables(self.spark, self.settings, self.tables)

    def ids(self) -> dict[str, set[int]]:
        """Every table's keys (its ``id`` column) in a current-state read now."""
        return frame_ids(self.read_once())

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                started = time.time()
                rows = sum(read_in_full(frame) for frame in self.read_once().values())
                self.reads.append((started, time.time(), rows))
                self._stop.wait(self.pause_s)
        except BaseException as exc:  # noqa: BLE001 - reported by stop()
            self.error = exc

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def check(self) -> None:
        if self.error is not None:
            raise RuntimeError(f"a current-state read failed: {self.error!r}") from self.error


@dataclass
class ReaderProcess:
    """``CurrentReader``'s reads in a Spark application of their own (``tests.bench.current_reads``) at nice
    ``nice``: a dashboard on other cores, which on the bench's 2 shared cores must not take the changelog's CPU.
    ``ids`` reads the final state on the bench's own ``spark`` session, once the input is in."""

    spark: Any
    settings: Any
    bootstrap: str
    tables: list[str]
    pause_s: float = 5.0
    nice: int = 10
    reads: list[tuple[float, float, int]] = field(default_factory=list)
    peak_rss_mib: int | None = None
    log: Path | None = None
    _out: Path | None = None
    _process: subprocess.Popen[bytes] | None = None

    def start(self, ready_within_s: float = 300.0) -> None:
        """Start the process and wait until its Spark session is up (so its start-up is not in the run)."""
        self._out = Path(tempfile.mkstemp(prefix="bench-reads-", suffix=".jsonl")[1])
        self._out.unlink()
        self.log = Path(tempfile.mkstemp(prefix="bench-reads-", suffix=".log")[1])
        command = [sys.executable, "-m", "tests.bench.current_reads", "--out", str(self._out)]
        command += ["--pause", str(self.pause_s), *self.tables]
        with self.log.open("wb") as out:
            self._process = subprocess.Popen(
                ["nice", "-n", str(self.nice), *command],
                env=sink_env(self.settings, self.bootstrap),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its JVM too is stopped by the process group at the end
            )
        deadline = time.monotonic() + ready_within_s
        while not self._out.exists():
            if self._process.poll() is not None or time.monotonic() > deadline:
                self._stop_group()
                raise RuntimeError(f"the reader process did not start:\n{self._tail()}")
            time.sleep(0.5)

    def stop(self) -> None:
        """Stop it (a read in progress is abandoned after 10 s: only completed reads count) and load its reads."""
        if self._process is None:
            return
        self.peak_rss_mib = _peak_rss_mib(self._process.pid)
        failed = self._process.poll() not in (None, 0)
        self._process.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._process.wait(10)
        self._stop_group()
        if failed:
            raise RuntimeError(f"the reader process failed:\n{self._tail()}")
        if self._out is not None and self._out.exists():
            lines = [json.loads(line) for line in self._out.read_text().splitlines() if line]
            self.reads = [(r["started"], r["ended"], r["rows"]) for r in lines]

    def _stop_group(self) -> None:
        assert self._process is not None
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._process.pid, signal.SIGKILL)
        self._process.wait()

    def _tail(self) -> str:
        return "" if self.log is None else self.log.read_text(errors="replace")[-3000:]

    def ids(self) -> dict[str, set[int]]:
        """Every table's keys (its ``id`` column) in a current-state read now, on the bench's session."""
        return CurrentReader(self.spark, self.settings, self.tables).ids()

    def check(self) -> None:
        """Reads' failures are raised by ``stop``."""


def _peak_rss_mib(pid: int) -> int | None:
    """A running process' peak resident memory in MiB (None when its status cannot be read)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return None


def frame_ids(frames: dict[str, Any]) -> dict[str, set[int]]:
    """The keys (``id`` column) of Spark frames by source table (frames without columns: no table yet)."""
    return {
        table: {int(r[0]) for r in frame.select("id").collect()} for table, frame in frames.items() if frame.columns
    }


def read_freshness(
    reports: Iterable[Any], reads: Sequence[tuple[float, float, int]], *, sent_from_ms: float
) -> Iterator[tuple[float, int]]:
    """(current-state freshness s, events) per event-time bucket of every changelog batch: the end of the
    first read that started after the batch's commit, minus the bucket's midpoint. Events no read saw
    yet are left out (``unseen_events`` counts them)."""
    ordered = sorted(reads)
    for report in reports:
        if report.visible_at_s is None:
            continue
        seen_at = next((ended for started, ended, _ in ordered if started >= report.visible_at_s), None)
        if seen_at is None:
            continue
        for bucket in report.stats.event_time:
            if bucket.mid_ms >= sent_from_ms:
                yield max(0.0, seen_at - bucket.mid_ms / 1000), bucket.count


def unseen_events(reports: Iterable[Any], reads: Sequence[tuple[float, float, int]]) -> int:
    last_start = max((started for started, _, _ in reads), default=float("inf"))
    return sum(r.changelog_rows for r in reports if r.visible_at_s is None or r.visible_at_s > last_start)


def truth_mismatches(ids: dict[str, set[int]], *, events: int, seed: int, tables: int, database: str) -> list[str]:
    """The tables whose current state (``ids``: its keys by source table, ``CurrentReader.ids``) does not hold
    exactly the keys of the generator's table after ``events`` changes, each with what differs; empty when every
    table matches."""
    workload = Workload(seed=seed, tables=tables, database=database)
    for _ in workload.run(events):
        pass
    wrong: list[str] = []
    for name, rows in workload.state.items():
        table = f"{database}.{name}"
        got = ids.get(table, set())
        want = {int(key) for key in rows}
        if got != want:
            wrong.append(f"{table}: {len(got - want)} keys too many, {len(want - got)} missing")
    return wrong


def progress_commits(progress: Iterable[dict[str, Any]]) -> list[tuple[float, int]]:
    """(wall time the batch committed, rows read so far) per progress event of a query: its trigger start
    plus its trigger's duration. For a query without a report of its own (the bare copy), this is when each
    batch's rows became visible."""
    out: list[tuple[float, int]] = []
    rows = 0
    for event in progress:
        started = datetime.datetime.strptime(event["timestamp"], "%Y-%m-%dT%H:%M:%S.%fZ")
        started_s = started.replace(tzinfo=datetime.UTC).timestamp()
        rows += int(event.get("numInputRows", 0))
        out.append((started_s + int(event["durationMs"].get("triggerExecution", 0)) / 1000, rows))
    return out


def commit_freshness(
    ticks: Sequence[tuple[int, int]], commits: Sequence[tuple[float, int]], *, sent_from_ms: float = -math.inf
) -> list[tuple[float, int]]:
    """(freshness s, events) of the events the producer sent (``ticks``: events sent so far and their
    ``ts_ms``, in send order), each made visible by the first commit whose rows so far reach it
    (``commits``, in order). The partitions are read in offset order and sent to round-robin, so the
    n-th event sent is about the n-th read. Events no commit reached are left out."""
    out: list[tuple[float, int]] = []
    before = 0
    at = 0
    for cumulative, ts_ms in ticks:
        first = before
        while first < cumulative:
            while at < len(commits) and commits[at][1] <= first:
                at += 1
            if at == len(commits):
                break
            last = min(cumulative, commits[at][1])
            if ts_ms >= sent_from_ms:
                out.append((max(0.0, commits[at][0] - ts_ms / 1000), last - first))
            first = last
        before = cumulative
    return out


@dataclass
class MirrorPoller:
    """Polls a mirror process' ``/metrics`` every ``every_s`` seconds for the newest event every mirror holds
    (the least of ``binlake_sink_mirror_last_event_timestamp_seconds`` over ``tables``) and its last mirror
    commit: the mirrors' lag as their operator sees it, from a process whose batches this one cannot see."""

    port: int
    tables: list[str]
    every_s: float = 1.0
    polls: list[tuple[float, float | None, float | None]] = field(default_factory=list)
    """(wall time polled, newest event time every mirror holds, last mirror commit) per answered poll."""
    last_text: str = ""
    """The last answered poll's Prometheus text."""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="bench-mirror-poller", daemon=True)
        self._thread.start()

    def poll_once(self) -> tuple[float, float | None, float | None] | None:
        import urllib.request

        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as answer:
                text = answer.read().decode()
        except OSError:
            return None  # not serving yet, or busy: the next poll tries again
        self.last_text = text
        return (time.time(), *parse_mirror_metrics(text, self.tables))

    def step_seconds(self) -> dict[str, float]:
        """The mirror batches' seconds per step (``binlake_sink_batch_step_seconds``) at the last poll."""
        steps: dict[str, float] = {}
        for line in self.last_text.splitlines():
            if line.startswith("binlake_sink_batch_step_seconds_total{"):
                labels, value = line.rsplit(" ", 1)
                steps[labels.split('step="', 1)[1].split('"', 1)[0]] = round(float(value), 1)
        return steps

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            polled = self.poll_once()
            if polled is not None:
                self.polls.append(polled)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()


def parse_mirror_metrics(text: str, tables: Sequence[str]) -> tuple[float | None, float | None]:
    """(the least newest-event time over ``tables``, None until every one has a mirror commit; the last mirror
    commit's wall time, None before the first) from a sink's Prometheus text."""
    newest: dict[str, float] = {}
    last_commit: float | None = None
    for line in text.splitlines():
        if line.startswith("binlake_sink_mirror_last_event_timestamp_seconds{"):
            labels, value = line.rsplit(" ", 1)
            table = labels.split('table="', 1)[1].split('"', 1)[0]
            newest[table] = float(value)
        elif line.startswith("binlake_sink_mirror_last_commit_timestamp_seconds "):
            last_commit = float(line.rsplit(" ", 1)[1]) or None
    held = [newest[table] for table in tables if table in newest]
    return (min(held) if held and len(held) == len(tables) else None), last_commit


def mirror_freshness(
    ticks: Sequence[tuple[int, int]],
    polls: Sequence[tuple[float, float | None, float | None]],
    *,
    sent_from_ms: float = -math.inf,
    sent_before_ms: float = math.inf,
) -> list[tuple[float, int]]:
    """(mirror freshness s, events) of the events the producer sent (``ticks``) between ``sent_from_ms`` and
    ``sent_before_ms``: the first poll (``MirrorPoller.polls``) whose newest event every mirror holds reaches
    the event's ``ts_ms``, minus that ``ts_ms``. Exact to a poll's interval; events no poll saw are left out."""
    seen = sorted((at, held) for at, held, _ in polls if held is not None)
    out: list[tuple[float, int]] = []
    before = 0
    at = 0
    for cumulative, ts_ms in ticks:  # in send order: ts_ms never decreases
        while at < len(seen) and seen[at][1] * 1000 < ts_ms:
            at += 1
        if at < len(seen) and sent_from_ms <= ts_ms < sent_before_ms:
            out.append((max(0.0, seen[at][0] - ts_ms / 1000), cumulative - before))
        before = cumulative
    return out
