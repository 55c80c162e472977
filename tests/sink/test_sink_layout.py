"""The sink's package layout: the read-only lake tools (``spark_sink.lake``) import no writer module.

``binlake lake`` reads what the two queries wrote through the lake's contract (``spark_sink.layout``)
and shared readers; were a tool to import ``spark_sink.changelog`` or ``spark_sink.mirror``, the
contract would be back inside the writers.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import binlake.spark_sink

pytestmark = pytest.mark.unit

ROOT = Path(binlake.spark_sink.__file__).resolve().parent
WRITERS = ("binlake.spark_sink.changelog", "binlake.spark_sink.mirror")


def _imported(tree: ast.AST) -> list[str]:
    """Every module an ``import`` or ``from ... import`` names, with each name of ``from spark_sink import``
    as the module it may be (``from spark_sink import mirror`` -> ``spark_sink.mirror``)."""
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found.append(node.module)
            found.extend(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            raise AssertionError(f"relative import at line {node.lineno}: the sink imports absolutely")
    return found


def _is_writer(module: str) -> bool:
    return any(module == writer or module.startswith(writer + ".") for writer in WRITERS)


def test_the_lake_tools_import_no_writer() -> None:
    modules = sorted((ROOT / "lake").glob("*.py"))
    assert {path.stem for path in modules} >= {"__init__", "cli", "native", "show", "verify", "facts"}
    offending = {
        str(path.relative_to(ROOT.parent)): writers
        for path in modules
        if (writers := [m for m in _imported(ast.parse(path.read_text())) if _is_writer(m)])
    }
    assert not offending, f"spark_sink.lake imports writer modules: {offending}"


def test_the_check_sees_every_form_of_import() -> None:
    sources = [
        "from binlake.spark_sink import mirror",
        "from binlake.spark_sink import changelog as c",
        "import binlake.spark_sink.mirror.apply",
        "from binlake.spark_sink.changelog.table import ensure_table",
        "def f():\n    from binlake.spark_sink.mirror.tombstones import TABLE",
    ]
    for source in sources:
        assert any(_is_writer(m) for m in _imported(ast.parse(source))), source
    for source in ["from binlake.spark_sink import layout, lake", "from binlake.spark_sink.events.rows import expand"]:
        assert not any(_is_writer(m) for m in _imported(ast.parse(source))), source


def test_the_contract_imports_nothing_of_spark() -> None:
    """``binlake lake show`` reads ``layout`` without Spark: the module is names only."""
    tree = ast.parse((ROOT / "layout.py").read_text())
    assert [m for m in _imported(tree) if m != "typing" and not m.startswith(("typing.", "__future__"))] == []
