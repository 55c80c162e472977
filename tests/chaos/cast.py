"""The processes under chaos: two ``binlake normalizer`` per format (one consumer group) and ``binlake sink``.

Each role is started as ``make demo`` starts its services (``shared.cli.demo.fleet``: the real CLI, a
session of its own, its log in ``<logs>/<name>.<incarnation>.log``) with the demo's settings
(``shared.cli.demo.pipeline``), on a new metrics port each time. ``kill`` is a crash: SIGKILL to every
process of the role's session at once (the sink's Python driver and its JVM), by pid. A role the
controller killed is ``down`` until it is started again; one that exits by itself is an unplanned exit
(``Cast.exited``), which the supervisor records and restarts.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from aiokafka import TopicPartition

from binlake.shared.cli.demo import scrape
from binlake.shared.cli.demo.fleet import Fleet, Service, session_members
from binlake.shared.cli.demo.pipeline import SINK_ENV, UNIFIED, normalizer_env
from binlake.shared.cli.demo.traffic import parse_options
from binlake.shared.devbroker.broker import free_port
from binlake.shared.kafka.assignment import transactional_id
from tests.support.sink_checkpoint import planned

MEMBERS = ("a", "b")
"""The two normalizers of each format's consumer group."""
NORMALIZER_ENV = {
    # A killed member's partitions move to its peer after this (the default is 10 s).
    "BINLAKE_SESSION_TIMEOUT_MS": "6000",
    # Back from the broker's restart within seconds, not the default 30 s of back-off.
    "BINLAKE_RETRY_BACKOFF_MAX_S": "4",
}


@dataclass
class Role:
    name: str
    format_id: str | None = None
    """None: the sink."""
    incarnation: int = 0
    service: Service | None = None
    down: bool = False
    """Killed by the controller, not started again yet."""
    planned_at_start: dict[Path, set[int]] = field(default_factory=dict)
    """The sink's queries' planned batches when this incarnation started (``tests.support.sink_checkpoint``)."""

    @property
    def group(self) -> str:
        return f"demo-{self.format_id}"  # normalizer_env's group

    @property
    def is_sink(self) -> bool:
        return self.format_id is None


@dataclass
class Cast:
    bootstrap: str
    out: Path
    history_tables: str
    max_offsets: int
    normalizer_env: dict[str, str] = field(default_factory=dict)
    """Settings of every normalizer over ``NORMALIZER_ENV``."""
    fleet: Fleet = field(init=False)
    roles: list[Role] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.fleet = Fleet(self.out / "logs")

    @property
    def lake(self) -> Path:
        return self.out / "lake"

    def checkpoints(self) -> list[Path]:
        """The changelog query's and the mirror query's checkpoints (``SinkSettings`` defaults)."""
        return [self.lake / "_checkpoints" / "sink", self.lake / "_checkpoints" / "mirrors"]

    def add(self, formats: list[str]) -> None:
        self.roles.append(Role("sink"))
        self.roles += [Role(f"normalizer-{fmt}-{member}", fmt) for fmt in formats for member in MEMBERS]

    @property
    def sink(self) -> Role:
        return self.roles[0]

    @property
    def normalizers(self) -> list[Role]:
        return self.roles[1:]

    def start(self, role: Role) -> Service:
        role.incarnation += 1
        port = free_port()
        name = f"{role.name}.{role.incarnation}"
        if role.format_id is None:
            role.planned_at_start = {checkpoint: planned(checkpoint) for checkpoint in self.checkpoints()}
            args = ["sink", "--topic", UNIFIED, "--lake", str(self.lake), "--bootstrap-servers", self.bootstrap]
            args += ["--metrics-port", str(port)]
            env = {
                **SINK_ENV,
                "BINLAKE_SINK_HISTORY_TABLES": self.history_tables,
                "BINLAKE_SINK_MAX_OFFSETS_PER_TRIGGER": str(self.max_offsets),
            }
        else:
            args = ["normalizer"]
            fmt = role.format_id
            env = normalizer_env(fmt, parse_options(fmt), self.bootstrap, port, self.out / "schemas")
            env.update(NORMALIZER_ENV)
            env.update(self.normalizer_env)
        role.service = self.fleet.start(name, args, env, port)
        role.down = False
        return role.service

    def kill(self, role: Role) -> None:
        """SIGKILL every process of the role's session (a stopped one too), by pid; wait for the role's own."""
        service = role.service
        if service is None:
            return
        for pid in [service.pid, *session_members(service.pid)]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            service.process.wait(30)
        deadline = time.monotonic() + 10
        while session_members(service.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        role.down = True

    def live(self, role: Role) -> bool:
        return role.service is not None and not role.down and role.service.exited() is None

    def exited(self) -> list[tuple[Role, int]]:
        """Roles whose process ended without the controller killing it, with the exit code."""
        found = []
        for role in self.roles:
            code = None if role.service is None or role.down else role.service.exited()
            if code is not None:
                found.append((role, code))
        return found

    def transactional_ids(self, role: Role) -> set[str]:
        """The transactional ids of the input partitions the normalizer owns now (read from its /metrics:
        ``binlake_partition_stalled_seconds`` has a series per owned partition); empty if it does not answer."""
        if role.service is None:
            return set()
        samples = scrape.scrape(role.service.metrics_port)
        if samples is None:
            return set()
        return {
            transactional_id(role.group, TopicPartition(labels["topic"], int(labels["partition"])))
            for name, labels, _ in samples.values
            if name == "binlake_partition_stalled_seconds"
        }
