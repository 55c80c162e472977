"""How ``binlake sink`` stops: the interrupted micro-batch py4j reports after a stop is one INFO line."""

from __future__ import annotations

import logging
import signal

import pytest

from binlake.shared.cli import stopping
from binlake.spark_sink import cli

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
