"""Start a real ``binlake`` process and signal it at a chosen moment of its start-up.

Moments are counted from when the interpreter is up, which Linux shows in
``/proc/<pid>/status``: CPython installs its SIGINT handler while it
initialises, before any module of the program is imported. Counting from the
``Popen`` instead would make a moment depend on how long the machine takes to
exec Python. ``HANDLER`` is the moment binlake's own handler is in place (its
first line): the earliest a clean stop can be asked for.

A service's moments are floored at ``HANDLER`` (``after_handler``): before
binlake's first line the interpreter imports its site packages and keeps the
default actions by design, and on a busy machine that can outlast a moment of
0.2 s, which would then test the interpreter rather than binlake.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[2]
HANDLER: Final = -1.0
"""A moment: as soon as the process catches SIGTERM (binlake's first line), no later."""


def binlake_command(*args: str) -> list[str]:
    """``binlake ARGS`` through the installed console script, as an operator or a container runs it."""
    script = Path(sys.executable).parent / "binlake"
    return [str(script), *args] if script.exists() else [sys.executable, "-m", "binlake.shared.cli.main", *args]


def catches(pid: int, signum: int) -> bool:
    """Whether process ``pid`` has a handler for ``signum`` (SigCgt in /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signum - 1) & 1)
    return False


@dataclass(frozen=True, slots=True)
class Outcome:
    returncode: int
    output: str
    signalled_after_s: float
    """Seconds from the interpreter being up to the signal."""


def signal_during_start(
    command: list[str],
    env: dict[str, str],
    *,
    moment_s: float,
    signum: int = signal.SIGTERM,
    timeout_s: float = 60.0,
    log: Path | None = None,
    after: Callable[[subprocess.Popen[bytes]], bool] | None = None,
    after_handler: bool = False,
) -> Outcome:
    """Run ``command``, send ``signum`` ``moment_s`` seconds after its interpreter is up (or at ``HANDLER``),
    or after ``after`` holds, and wait for it to exit; stdout and stderr together (in ``log`` when given).

    With ``after_handler`` the signal is never sent before binlake's handler is in place."""
    out_path = log if log is not None else Path(os.devnull)
    with open(out_path, "ab") as sink:
        process = subprocess.Popen(
            command,
            env=env,
            stdin=subprocess.PIPE,  # open and silent: a command reading stdin waits rather than ends
            stdout=subprocess.PIPE if log is None else sink,
            stderr=subprocess.STDOUT,
            cwd=REPO,
        )
    try:
        wanted = signal.SIGTERM if moment_s == HANDLER else signal.SIGINT
        _until(
            command,
            process,
            lambda: catches(process.pid, wanted),
            deadline=time.monotonic() + 30,
            failure="never started",
            interval_s=0.0005,
        )
        up = time.monotonic()
        if after is not None:
            _until(
                command,
                process,
                lambda: after(process),
                deadline=up + timeout_s,
                failure="the awaited moment never came",
                interval_s=0.01,
            )
        if moment_s > 0:
            time.sleep(moment_s)
        if after_handler:
            _until(
                command,
                process,
                lambda: catches(process.pid, signal.SIGTERM),
                deadline=up + timeout_s,
                failure="binlake's handler never came",
                interval_s=0.0005,
            )
        process.send_signal(signum)
        signalled = time.monotonic() - up
        if log is None:
            output, _ = process.communicate(timeout=timeout_s)
            text = output.decode(errors="replace")
        else:
            process.wait(timeout_s)
            text = log.read_text(errors="replace")
        return Outcome(process.returncode, text, signalled)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)
        if process.stdin is not None:
            process.stdin.close()


def _until(
    command: list[str],
    process: subprocess.Popen[bytes],
    holds: Callable[[], bool],
    *,
    deadline: float,
    failure: str,
    interval_s: float,
) -> None:
    """Poll ``holds`` every ``interval_s`` until it does; fail with ``failure`` if the process ends or
    ``deadline`` (monotonic) passes first."""
    while not holds():
        if process.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"{command}: {failure} (status {process.poll()})")
        time.sleep(interval_s)


def children(pid: int) -> list[int]:
    """The child processes of ``pid`` (Spark's JVM for the sink)."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []
