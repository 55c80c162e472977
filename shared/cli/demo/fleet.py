"""The demo's processes: the real ``binlake`` services, started as child processes and stopped by pid.

Each service runs as ``python -m binlake.shared.cli.main <command>`` (what the
``binlake`` script runs) in a session of its own, with its stdout and stderr in
``<logs>/<name>.log``: the services' JSON logs and the JVM's output stay out of
the demo's terminal, and a Ctrl-C on the terminal reaches the demo only, which
then stops each service itself, in order. ``stop`` sends SIGTERM (the services
stop cleanly on it), waits, then SIGKILLs the process and whatever is left in
its session (the sink's JVM), each by pid; ``leftovers`` lists them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(slots=True)
class Service:
    name: str
    process: subprocess.Popen[bytes]
    log: Path
    metrics_port: int
    terminated: bool = False
    """SIGTERM was sent: once only (a second one, arriving while it shuts down, would kill it)."""

    def terminate(self) -> None:
        if not self.terminated and self.exited() is None:
            self.terminated = True
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    @property
    def pid(self) -> int:
        return self.process.pid

    def exited(self) -> int | None:
        """The exit code once the process has ended, else None."""
        return self.process.poll()

    def log_tail(self, lines: int = 15) -> str:
        try:
            text = self.log.read_text("utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])


def session_members(session_id: int) -> list[int]:
    """Pids of the live processes in session ``session_id`` (Linux ``/proc``; [] elsewhere)."""
    members = []
    proc = Path("/proc")
    if not proc.is_dir():
        return []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # ended meanwhile
        fields = stat.rsplit(")", 1)[-1].split()
        # fields: state ppid pgrp session ...; a zombie has ended (its parent has not reaped it yet)
        if len(fields) > 3 and int(fields[3]) == session_id and fields[0] != "Z":
            members.append(int(entry.name))
    return sorted(members)


@dataclass
class Fleet:
    logs: Path
    services: list[Service] = field(default_factory=list)

    def start(self, name: str, args: list[str], env: dict[str, str], metrics_port: int) -> Service:
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                [sys.executable, "-m", "binlake.shared.cli.main", *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env={**os.environ, **env},
                start_new_session=True,  # the terminal's Ctrl-C goes to the demo, which stops services in order
            )
        service = Service(name, process, log, metrics_port)
        self.services.append(service)
        return service

    def stop(self, service: Service, *, grace_s: float) -> int | None:
        """SIGTERM, wait up to ``grace_s``, then SIGKILL what is left of its session; the exit code."""
        if service.exited() is None:
            service.terminate()
            try:
                service.process.wait(grace_s)
            except subprocess.TimeoutExpired:
                os.kill(service.pid, signal.SIGKILL)
                service.process.wait(10)
        # The sink's JVM notices its parent's end and exits by itself; whatever is still there after a
        # moment is killed, by pid.
        deadline = time.monotonic() + 5
        while session_members(service.pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        for pid in session_members(service.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return service.exited()

    def stop_all(self, names: list[str] | None = None, *, grace_s: float = 30.0) -> dict[str, int | None]:
        """Stop the named services (all by default), in reverse start order; their exit codes."""
        chosen = [s for s in reversed(self.services) if names is None or s.name in names]
        # Signal them all first, so they stop side by side, then wait for each.
        for service in chosen:
            service.terminate()
        return {service.name: self.stop(service, grace_s=grace_s) for service in chosen}

    def leftovers(self) -> list[int]:
        """Pids of any process the fleet started that is still running (itself or in its session)."""
        out: list[int] = []
        for service in self.services:
            if service.exited() is None:
                out.append(service.pid)
            out.extend(pid for pid in session_members(service.pid) if pid != service.pid)
        return sorted(set(out))
