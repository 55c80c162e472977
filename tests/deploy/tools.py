"""The deployment tools the checks run (helm, kubeconform, promtool, docker compose, prometheus).

`make tools` installs them from the package registries into ~/.cache/binlake/tools (kept between runs and
clones on one machine) and `make test` puts that folder on PATH. Run by hand without them, a check skips
and says which tool is missing; in CI (CI set) it fails instead, so a broken install cannot pass unseen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Final

import pytest

TOOLS: Final = Path(os.environ.get("BINLAKE_TOOLS_DIR", Path.home() / ".cache" / "binlake" / "tools"))


def tool(name: str) -> str:
    """The path of a deployment tool, or skip (fail in CI) naming the make target that installs it."""
    found = shutil.which(name) or shutil.which(name, path=str(TOOLS / "bin"))
    if found is None:
        message = f"{name} is not installed: run `make tools` (installs it into {TOOLS})"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def run(*command: str, input_text: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, input=input_text, capture_output=True, text=True, check=False, timeout=300)
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done
