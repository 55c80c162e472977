"""How ``binlake sink`` stops: it waits (a while) for the batches in progress, and the interrupted micro-batch
py4j reports after a stop is one INFO line."""

from __future__ import annotations

import logging
import signal
import time

import pytest

from binlake.shared.cli import stopping
from binlake.spark_sink import cli
from binlake.spark_sink.job import SinkQueries

pytestmark = pytest.mark.unit


def _record(error: Exception, level: int = logging.ERROR) -> logging.LogRecord:
    exc_info = (type(error), error, None)
    return logging.LogRecord(cli.PY4J_LOGGER, level, __file__, 1, "There was an exception", (), exc_info)


def test_an_interruption_after_a_stop_is_one_info_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stopping, "requested", lambda: signal.SIGTERM)
    record = _record(RuntimeError("An error occurred while calling o725.update.\n: java.lang.InterruptedException"))
    assert cli.InterruptedAtStop().filter(record)
    assert record.levelno == logging.INFO
    assert record.getMessage() == cli.INTERRUPTED_AT_STOP
    assert record.exc_info is None


@pytest.mark.parametrize(
    ("asked", "error"),
    [
        (None, RuntimeError("java.lang.InterruptedException")),  # no stop asked: a real failure
        (signal.SIGTERM, RuntimeError("java.io.FileNotFoundException")),  # another error during a stop
    ],
)
def test_other_errors_stay_errors(monkeypatch: pytest.MonkeyPatch, asked: int | None, error: Exception) -> None:
    monkeypatch.setattr(stopping, "requested", lambda: asked)
    record = _record(error)
    assert cli.InterruptedAtStop().filter(record)
    assert record.levelno == logging.ERROR
    assert record.exc_info is not None


class _Query:
    """What ``SinkQueries.stop`` asks of a streaming query: whether it runs a trigger, and stop."""

    def __init__(self, busy_polls: int) -> None:
        self.busy_polls = busy_polls
        self.isActive = True
        self.stopped_while_busy: bool | None = None

    @property
    def status(self) -> dict[str, object]:
        busy = self.busy_polls > 0
        self.busy_polls -= 1
        return {"isTriggerActive": busy}

    def stop(self) -> None:
        self.stopped_while_busy = self.busy_polls > 0
        self.isActive = False


def test_a_stop_waits_for_the_batch_in_progress() -> None:
    changelog, mirrors = _Query(busy_polls=0), _Query(busy_polls=3)
    SinkQueries(changelog, mirrors).stop(grace_s=30)  # type: ignore[arg-type]  # the two members it uses
    assert (changelog.stopped_while_busy, mirrors.stopped_while_busy) == (False, False)


def test_a_stop_cuts_a_batch_longer_than_the_grace_short() -> None:
    mirrors = _Query(busy_polls=10**9)
    SinkQueries(None, mirrors).stop(grace_s=0.5)  # type: ignore[arg-type]
    assert mirrors.stopped_while_busy is True


class _BackToBack(_Query):
    """A query whose next batch starts right after the last (its batches outlast its trigger interval): idle
    only for a moment (``idle_s`` after it is made, for ``gap_s``)."""

    def __init__(self, idle_s: float, gap_s: float) -> None:
        super().__init__(busy_polls=0)
        self.idle_from = time.monotonic() + idle_s
        self.idle_until = self.idle_from + gap_s

    def _busy(self) -> bool:
        return not self.idle_from <= time.monotonic() < self.idle_until

    @property
    def status(self) -> dict[str, object]:
        return {"isTriggerActive": self._busy()}

    def stop(self) -> None:
        self.stopped_while_busy = self._busy()
        self.isActive = False


class _BusyFor(_Query):
    def __init__(self, busy_s: float) -> None:
        super().__init__(busy_polls=0)
        self.until = time.monotonic() + busy_s

    @property
    def status(self) -> dict[str, object]:
        return {"isTriggerActive": time.monotonic() < self.until}

    def stop(self) -> None:
        self.stopped_while_busy = time.monotonic() < self.until
        self.isActive = False


def test_each_query_stops_in_its_own_pause_between_batches() -> None:
    """The mirror query pauses between two batches while the changelog query is still busy: it is stopped
    then, rather than cut short at the end of the grace because the two were never idle together."""
    changelog = _BusyFor(0.6)
    mirrors = _BackToBack(idle_s=0.2, gap_s=0.15)
    SinkQueries(changelog, mirrors).stop(grace_s=3)  # type: ignore[arg-type]
    assert (changelog.stopped_while_busy, mirrors.stopped_while_busy) == (False, False)
