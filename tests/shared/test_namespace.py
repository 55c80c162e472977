"""binlake installs one top-level package, ``binlake``: its code imports itself only by that name.

``binlake/`` links the repository's ``shared/``, ``services/`` and ``spark_sink/`` folders, so
``import shared.x`` would still work from a checkout, as a second copy of the module under another
name (its classes and caches apart from ``binlake.shared.x``'s), and not at all from the wheel.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
TOPS = {"shared", "services", "spark_sink"}


def _sources() -> list[Path]:
    folders = [ROOT / name for name in (*sorted(TOPS), "tests", "deploy")]
    return [ROOT / "setup.py", *(p for folder in folders for p in folder.rglob("*.py"))]


def test_code_imports_binlake_by_its_one_name() -> None:
    wrong: list[str] = []
    for path in _sources():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            wrong += [f"{path.relative_to(ROOT)}:{node.lineno} {n}" for n in names if n.split(".")[0] in TOPS]
    assert not wrong, "import these as binlake.<name>: " + ", ".join(wrong[:10])


def test_the_package_links_the_source_folders() -> None:
    import binlake

    package = Path(binlake.__file__).parent
    for name in sorted(TOPS):
        assert (package / name).resolve() == ROOT / name, name
