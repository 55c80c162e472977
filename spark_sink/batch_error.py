"""A failed micro-batch, reported in a few lines: logged whole, raised to Spark short.

When a query is stopped, Spark tests the text of its ``foreachBatch`` function's
error against a regex (``StreamExecution.PROXY_ERROR``: was it the stop?) that
recurses once per character after "Py4JJavaError: An error occurred while
calling". The error of an interrupted JVM call carries its Java stack trace (a
few KB), enough to kill the query's thread with a ``StackOverflowError`` (seen
in the sustained bench, and at any stop during a JVM call). So the batch
function logs its error whole and raises a ``BatchError`` of at most
``MESSAGE_CHARS`` characters: a failure names its cause in a few lines, and a
stop still reads as a stop.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator
from typing import Any, Final

from pyspark.sql import DataFrame

from binlake.shared.errors import BinlakeError

log = logging.getLogger("binlake.sink")

MESSAGE_CHARS: Final = 2_000
"""The most characters of the cause a ``BatchError`` carries (the whole error is in the log)."""

# The JVM errors Spark takes for a stopped query (StreamExecution.IO_EXCEPTION_NAMES).
_INTERRUPTS: Final = frozenset(
    {"java.lang.InterruptedException", "java.io.InterruptedIOException", "java.nio.channels.ClosedByInterruptException"}
)
# What Spark's regex looks for before one of those names (a stop's error must keep it).
_PROXY_PREFIX: Final = "py4j.protocol.Py4JJavaError: An error occurred while calling"


class BatchError(BinlakeError):
    """A micro-batch failed: the query stops, and a restart replays the batch (exactly once: every commit is
    under the batch's id). The message names the JVM or Python error; the sink's log has it whole. Not
    ``retriable``: whether the replay can succeed depends on the cause (a lost file server, or a bug)."""


def guarded(query: str, each: Callable[[DataFrame, int], None]) -> Callable[[DataFrame, int], None]:
    """``each`` (a ``foreachBatch`` function of query ``query``) with its errors logged and raised short."""

    @functools.wraps(each)
    def run(frame: DataFrame, batch_id: int) -> None:
        try:
            each(frame, batch_id)
        except Exception as error:  # noqa: BLE001 - the boundary to Spark: every error is raised short
            raise BatchError(summary(query, batch_id, error)) from None

    return run


def summary(query: str, batch_id: int, error: BaseException) -> str:
    """The error in at most ``MESSAGE_CHARS`` characters, logged whole with its traceback. A stop's interruption
    is not logged here: py4j logs the raised error, which ``cli.InterruptedAtStop`` turns into one INFO line."""
    chain = _causes(error)
    interrupted = next((name for name in _INTERRUPTS for cause in chain if name in cause), None)
    if interrupted is not None:
        # Short, and still Spark's "stopped" text: the stop is not reported as a failure.
        return f"{query} batch {batch_id} interrupted: {_PROXY_PREFIX} the JVM\n: {interrupted}"
    log.error("%s batch %d failed", query, batch_id, exc_info=error)
    text = f"{query} batch {batch_id} failed: " + "; caused by ".join(chain)
    return text if len(text) <= MESSAGE_CHARS else text[: MESSAGE_CHARS - 20] + " ... (see the log)"


def _causes(error: BaseException) -> list[str]:
    """Each of the error and its causes (at most 8) as "class: first line of its message", from the JVM's throwable
    where the error carries one (py4j's ``java_exception``; PySpark's converted errors keep it as ``_origin``)."""
    java = getattr(error, "java_exception", None) or getattr(error, "_origin", None)
    if java is not None:
        try:
            return list(_java_chain(java))
        except Exception:  # noqa: BLE001 - the JVM is gone (a stop at exit): the Python side's text is all there is
            pass
    chain: list[str] = []
    cause: BaseException | None = error
    while cause is not None and len(chain) < _MAX_CAUSES:
        chain.append(f"{type(cause).__module__}.{type(cause).__qualname__}: {_first_line(str(cause))}")
        # PySpark's converted errors (an unknown JVM class's among them: its text names it) chain as ``_cause``.
        cause = getattr(cause, "_cause", None) or cause.__cause__
    return chain


def _java_chain(throwable: Any) -> Iterator[str]:
    """A Java throwable and its causes (at most 8), each as "class: first line of its message"."""
    seen = 0
    while throwable is not None and seen < _MAX_CAUSES:
        yield f"{throwable.getClass().getName()}: {_first_line(str(throwable.getMessage() or ''))}"
        throwable = throwable.getCause()
        seen += 1


def _first_line(text: str) -> str:
    return text.split("\n", 1)[0][:500]


_MAX_CAUSES: Final = 8
