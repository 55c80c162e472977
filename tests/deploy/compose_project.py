"""One compose project of the stack for real (make test-deploy): its commands, and the project brought up for a
module's tests and torn down after them, its logs printed. Used by test_deploy_compose_stack.py and
test_deploy_compose_cluster.py."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.deploy.deployment_files import COMPOSE
from tests.deploy.tools import tool


@dataclass(frozen=True)
class ComposeProject:
    name: str
    events: int
    """BINLAKE_GENERATE_EVENTS, read by compose when it reads the file."""
    env_file: Path | None = None

    def run(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        command = [
            tool("docker-compose"),
            "-p",
            self.name,
            "--project-directory",
            str(COMPOSE.parent),
            "-f",
            str(COMPOSE),
        ]
        if self.env_file is not None:
            command += ["--env-file", str(self.env_file)]
        env = dict(os.environ, BINLAKE_GENERATE_EVENTS=str(self.events))
        return subprocess.run([*command, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)

    def ok(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """``run``, asserted to succeed."""
        done = self.run(*args, timeout=timeout)
        assert done.returncode == 0, f"{done.args}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    @contextmanager
    def up(self, services: list[str], *, log_tail: int) -> Iterator[None]:
        """``services`` up (from a clean project) for the block; then the logs and ``down -v``. Skips outside
        ``make test-deploy``."""
        if os.environ.get("BINLAKE_DEPLOY_STACK") != "1":
            pytest.skip("the compose stack runs in `make test-deploy` (images, a container engine; minutes)")
        assert os.environ.get("DOCKER_HOST"), "make test-deploy sets DOCKER_HOST to podman's Docker API socket"
        self.run("down", "-v", "--remove-orphans")
        try:
            self.ok("up", "-d", "--no-build", *services)
            yield
        finally:
            print(self.run("logs", "--no-color", "--tail", str(log_tail)).stdout[-20000:])
            self.run("down", "-v", "--remove-orphans")
