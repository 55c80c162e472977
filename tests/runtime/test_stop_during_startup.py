"""SIGTERM and SIGINT during a service's start-up stop it cleanly: status 0, no traceback.

A real ``binlake normalizer`` process is signalled at several moments of its
start: as soon as binlake's handler is in place, while the command modules are
imported (building the parser takes about half a second), while the runtime is
imported and built, and in its first broker back-off (no broker listens on the
bootstrap address, so no broker is needed). Before the handlers were installed
first, a SIGTERM in the imports killed the process with status -15. One-shot
commands keep the default actions.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from tests.support.signal_probe import HANDLER, binlake_command, signal_during_start

pytestmark = [
    pytest.mark.unit,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads signal handlers from /proc (Linux)"),
]

MOMENTS = [HANDLER, 0.2, 0.35, 0.6, 1.5]
"""Seconds after the interpreter is up: binlake's first line; the parser's imports (until about
0.45 s here; the site packages and ``shared.cli.main``'s own imports come first, 30 to 90 ms); the
normalizer's settings and runtime; its first broker back-off."""


def _normalizer_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BINLAKE_")}
    env.update(
        {
            "BINLAKE_FORMAT": "canal-json",
            "BINLAKE_INPUT_TOPICS": "canal.orders",
            "BINLAKE_KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1",  # refused: the broker back-off, no broker needed
            "BINLAKE_METRICS_PORT": "0",
            "BINLAKE_METRICS_HOST": "127.0.0.1",
            "BINLAKE_LOG_LEVEL": "INFO",
        }
    )
    return env


def _assert_clean(returncode: int, output: str, when: str) -> None:
    assert returncode == 0, f"{when}: status {returncode}\n{output[-3000:]}"
    assert "Traceback" not in output, f"{when}:\n{output[-3000:]}"


@pytest.mark.parametrize("moment", MOMENTS, ids=lambda m: "handler" if m == HANDLER else f"{m}s")
def test_sigterm_during_normalizer_start_is_a_clean_stop(moment: float) -> None:
    outcome = signal_during_start(binlake_command("normalizer"), _normalizer_env(), moment_s=moment, after_handler=True)
    _assert_clean(outcome.returncode, outcome.output, f"SIGTERM {outcome.signalled_after_s:.3f} s after start")


@pytest.mark.parametrize("moment", [0.2, 1.5])
def test_sigint_during_normalizer_start_is_a_clean_stop(moment: float) -> None:
    outcome = signal_during_start(
        binlake_command("normalizer"), _normalizer_env(), moment_s=moment, signum=signal.SIGINT, after_handler=True
    )
    _assert_clean(outcome.returncode, outcome.output, f"SIGINT {outcome.signalled_after_s:.3f} s after start")


def test_sigterm_during_a_format_module_start_is_a_clean_stop() -> None:
    """``python -m binlake.services.<format>``: its own imports come before ``main`` too."""
    command = [sys.executable, "-m", "binlake.services.canal_json"]
    outcome = signal_during_start(command, _normalizer_env(), moment_s=0.2, after_handler=True)
    _assert_clean(outcome.returncode, outcome.output, f"SIGTERM {outcome.signalled_after_s:.3f} s after start")


@pytest.mark.parametrize("moment", [0.2, 1.5])
def test_one_shot_commands_keep_the_default_action(moment: float) -> None:
    """``binlake normalize`` reading stdin: a SIGTERM held during start-up acts when the command is known."""
    command = binlake_command("normalize", "--format", "canal-json")
    outcome = signal_during_start(command, dict(os.environ), moment_s=moment)
    assert outcome.returncode == -signal.SIGTERM, outcome.output[-3000:]
