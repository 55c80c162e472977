"""How ``binlake sink`` stops: it waits (a while) for the batches in progress, and the interrupted micro-batch
py4j reports after a stop is one INFO line."""

from __future__ import annotations

import logging
import signal

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
