"""docs/formats.md is exactly what ``binlake formats --markdown`` prints (no drift)."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.shared.cli.formats import markdown

pytestmark = pytest.mark.unit


def test_formats_doc_is_current() -> None:
    committed = (Path(__file__).parents[2] / "docs" / "formats.md").read_text("utf-8")
    assert committed == markdown(), "regenerate: binlake formats --markdown > docs/formats.md"
