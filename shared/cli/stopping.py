"""SIGTERM and SIGINT held from ``binlake``'s first line, so a stop asked during start-up is a clean stop.

Choosing a command imports every command module (about half a second), the
normalizer's start imports its runtime and the sink's starts Spark (seconds).
With the default actions a SIGTERM in that time killed the process with status
-15 (143 in a container) in the middle of whatever it was doing, and a SIGINT
printed a ``KeyboardInterrupt`` traceback. ``binlake`` therefore calls
:func:`hold` before anything else: a signal is recorded, and a service checks
:func:`requested` between the steps of its start, then hands the signals to its
own loop, and exits 0. One-shot commands (``normalize``, ``generate``...) get
the default actions back (:func:`release`), a signal that came meanwhile acting
then, as it would have.

Only the interpreter's own start, before any binlake code runs (tens of
milliseconds, nothing opened yet), keeps the default action.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Final

SIGNALS: Final = (signal.SIGTERM, signal.SIGINT)
Handler = Callable[[int, FrameType | None], Any] | int | None

_received: list[int] = []
_previous: dict[int, Handler] = {}


def _record(signum: int, _frame: FrameType | None) -> None:
    _received.append(signum)


def hold() -> None:
    """Record SIGTERM and SIGINT instead of acting on them (again, if a library took one meanwhile).

    Only the main thread can set signal handlers; elsewhere (a test calling a
    command from a worker thread) this does nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in SIGNALS:
        previous = signal.signal(signum, _record)
        _previous.setdefault(signum, previous)


def requested() -> int | None:
    """The first signal recorded while held, or None."""
    return _received[0] if _received else None


def release(*, redeliver: bool = True) -> None:
    """Give back the handlers :func:`hold` replaced; with ``redeliver``, a recorded signal acts now.

    A service has acted on its signal already (``redeliver=False``); a one-shot
    command gets the default action of a signal that came while it was held.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in _previous.items():
        signal.signal(signum, previous)
    _previous.clear()
    received = _received[:1]
    _received.clear()
    if redeliver and received:
        signal.raise_signal(received[0])
