"""The mypyc-compiled hot path: present where it must be, current, and documented from source."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from binlake.shared import native
from binlake.shared.cli.formats import markdown

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def test_every_listed_module_has_its_source() -> None:
    for source in native.compiled_sources():
        assert (REPO / source).is_file(), source


def test_compiled_modules_are_not_older_than_their_sources() -> None:
    # An extension module wins the import over its .py: a stale one would test old code.
    assert native.stale() == [], "rebuild the compiled modules: make native"


@pytest.mark.skipif(
    os.environ.get("CI") != "true" or os.environ.get("BINLAKE_COMPILE") == "0",
    reason="the compiled build is required in CI (make builds it); BINLAKE_COMPILE=0 runs pure Python",
)
def test_ci_runs_the_compiled_build() -> None:
    status = native.status()
    assert [name for name, compiled in status.items() if not compiled] == []


def test_module_docstrings_come_from_source_even_when_compiled() -> None:
    doc = native.module_docstring("binlake.services.canal_json.parser")
    assert doc is not None and "Canal" in doc
    assert "## `canal-json`" in markdown()
