"""A SIGTERM while ``binlake dev broker start`` waits for its broker (or cluster) leaves no broker running.

The broker JVMs run in sessions of their own, so they outlive the command on purpose;
before, a SIGTERM in the wait (a supervisor's timeout, a CI step cancelled) ended Python
at once and left a broker that no ``broker.json`` named: nobody could stop it by its
run folder. Now the start stops what it launched, then ends by the signal's default
action, as the other one-shot commands do.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.broker import require_broker_tools
from tests.support.signal_probe import binlake_command

pytestmark = pytest.mark.integration


def _broker_jvms(run_dir: Path) -> list[int]:
    """The broker processes (``kafka.Kafka``, not the storage formatter) whose config lies in ``run_dir``."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            arguments = cmdline.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"kafka.Kafka" in arguments and any(str(run_dir).encode() in argument for argument in arguments):
            found.append(int(cmdline.parent.name))
    return found


@pytest.mark.parametrize(
    ("nodes", "launched"), [(1, 1), (3, 1), (3, 3)], ids=["broker", "cluster-launching", "cluster-waiting"]
)
def test_sigterm_while_the_start_waits_leaves_no_broker(nodes: int, launched: int, tmp_path: Path) -> None:
    """``launched``: how many broker JVMs run when the signal is sent (with fewer than ``nodes``, the start is
    still launching the others: a signal then must not lose the one being launched)."""
    require_broker_tools()
    run_dir = tmp_path / "broker"
    command = binlake_command("dev", "broker", "start", "--run-dir", str(run_dir), "--nodes", str(nodes))
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while len(_broker_jvms(run_dir)) < launched:
            assert process.poll() is None, process.communicate()[1].decode()[-3000:]
            assert time.monotonic() < deadline, "the broker JVMs never started"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert out == b"", "the signal came after the start had finished: no wait was interrupted"
    assert process.returncode == -signal.SIGTERM, err.decode()[-3000:]
    assert "stopped what this start launched" in err.decode()
    assert _broker_jvms(run_dir) == []
    assert not list(run_dir.rglob("broker.json")), "a stopped broker is still recorded as running"
