"""The demo's live progress: what each service's ``/metrics`` says, redrawn every second (rich).

On a terminal the table is redrawn in place; elsewhere (a pipe, CI, a test) a
one-line summary is printed every ``plain_every_s`` seconds instead, so logs
stay short.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from binlake.shared.cli.demo.scrape import NormalizerView, SinkView


@dataclass(slots=True)
class Snapshot:
    """Everything the progress shows at one moment."""

    elapsed_s: float
    stage: str
    sent: dict[str, int]
    """Messages produced to each format's vendor topic."""
    normalizers: dict[str, NormalizerView]
    sink: SinkView
    target_events: int | None = None
    """Committed events on the unified topic, once the normalizers are done."""
    caught_up: set[str] = field(default_factory=set)


def _age(now: float, then: float | None) -> str:
    return "-" if then is None else f"{max(0.0, now - then):.1f} s"


def render(snapshot: Snapshot) -> Group:
    table = Table(title=None, expand=False, show_edge=False, pad_edge=False)
    for header in ("format", "sent", "consumed", "produced", "dead letters", ""):
        table.add_column(header, justify="left" if header in ("format", "") else "right")
    for fmt, sent in snapshot.sent.items():
        view = snapshot.normalizers.get(fmt, NormalizerView())
        status = "done" if fmt in snapshot.caught_up else ("running" if view.up else "starting")
        table.add_row(
            fmt, str(sent), str(view.consumed), str(view.produced), str(sum(view.dead_letters.values())), status
        )
    sink = snapshot.sink
    now = time.time()
    target = "?" if snapshot.target_events is None else str(snapshot.target_events)
    if sink.up:
        sink_line = (
            f"sink: changelog {sink.changelog_rows}/{target} events, mirrors {sink.mirror_rows} applied, "
            f"{sink.batches} batches, mirror freshness {_age(now, sink.mirror_newest_event_s)}"
            f" (last mirror commit {_age(now, sink.mirror_last_commit_s)} ago)"
        )
    else:
        sink_line = "sink: starting (Spark)"
    head = Text(f"{snapshot.stage}  [{snapshot.elapsed_s:5.1f} s]", style="bold")
    return Group(head, table, Text(sink_line))


def plain(snapshot: Snapshot) -> str:
    done = len(snapshot.caught_up)
    consumed = sum(v.consumed for v in snapshot.normalizers.values())
    sink = snapshot.sink
    target = "?" if snapshot.target_events is None else str(snapshot.target_events)
    return (
        f"[{snapshot.elapsed_s:5.1f} s] {snapshot.stage}: normalizers {done}/{len(snapshot.sent)} done, "
        f"{consumed}/{sum(snapshot.sent.values())} consumed; sink changelog {sink.changelog_rows}/{target}, "
        f"mirrors {sink.mirror_rows}"
    )


class Progress:
    """``update`` with each new snapshot; ``close`` leaves the last one on screen."""

    def __init__(self, console: Console, *, plain_every_s: float = 15.0) -> None:
        self.console = console
        self.plain_every_s = plain_every_s
        self._live: Live | None = None
        self._last_plain = 0.0
        self._last_line = ""
        if console.is_terminal:
            self._live = Live(console=console, refresh_per_second=4, transient=False)
            self._live.start()

    def update(self, snapshot: Snapshot) -> None:
        if self._live is not None:
            self._live.update(render(snapshot))
        elif time.monotonic() - self._last_plain >= self.plain_every_s:
            self._last_plain = time.monotonic()
            self._print(plain(snapshot))

    def _print(self, line: str) -> None:
        if line != self._last_line:
            self._last_line = line
            self.console.print(line, highlight=False, soft_wrap=True)

    def close(self, snapshot: Snapshot | None = None) -> None:
        if self._live is not None:
            if snapshot is not None:
                self._live.update(render(snapshot))
            self._live.stop()
            self._live = None
        elif snapshot is not None:
            self._print(plain(snapshot))
