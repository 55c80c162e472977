"""SIGTERM and SIGINT during a dev broker's start: the start stops what it launched, and never loses a launch.

The broker JVMs run in sessions of their own (they outlive the CLI on purpose), so a
signal reaches only the Python process, whose default SIGTERM action ended it at once
and left unrecorded brokers running. Inside ``interruptible()`` the signals raise
``Interrupted`` instead, which unwinds through the start's cleanup (it stops every
process it launched). A signal during a launch (``deferred()``: between the fork and
the moment the new process is recorded) waits for the launch to end, so the process
it made is always among those the cleanup stops.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Final

SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)

_deferring = 0
_pending: list[int] = []


class Interrupted(BaseException):
    """SIGTERM (or SIGINT) during a start: a BaseException, so no ``except Exception`` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    # A second signal (a supervisor's `timeout` repeats it) must not cut the cleanup short.
    for each in SIGNALS:
        signal.signal(each, signal.SIG_IGN)
    if _deferring:
        _pending.append(signum)
        return
    raise Interrupted(signum)


@contextmanager
def interruptible() -> Iterator[None]:
    """SIGTERM and SIGINT raise ``Interrupted`` while the block runs (main thread only: elsewhere, no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread can take signals (a test calling a command from a worker thread)
        return
    previous = {signum: signal.signal(signum, _interrupt) for signum in SIGNALS}
    try:
        yield
    finally:
        _pending.clear()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """A signal that comes while the block runs raises ``Interrupted`` only once it has ended."""
    global _deferring
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if not _deferring and _pending:
        raise Interrupted(_pending.pop())
