"""Import the compiled hot path from its Python source, so the fuzzer can see its branches.

The parsers, the parsing toolkit and the event model are
compiled by mypyc (``shared/native.py``), and a compiled extension module wins
the import over its ``.py``. Neither atheris nor coverage.py sees inside a C
extension, so the coverage-guided run loads these modules from their source
instead: the same code (mypyc compiles exactly that source), every line and
branch visible. ``install()`` must run before anything imports them.
``tests.fuzz.replay`` then runs what the fuzzer kept through the compiled
build too, so the build users run is held to the same checks.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from binlake.shared.native import COMPILED

ROOT = Path(__file__).resolve().parents[2]


class PureSourceFinder(importlib.abc.MetaPathFinder):
    """Finds each module of ``COMPILED`` as its ``.py`` file, ignoring the extension beside it."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in COMPILED:
            return None
        source = ROOT.joinpath(*fullname.split(".")).with_suffix(".py")
        loader = importlib.machinery.SourceFileLoader(fullname, str(source))
        return importlib.util.spec_from_file_location(fullname, source, loader=loader)


def install() -> None:
    """Load the compiled modules from source in this process; fails if one is already imported."""
    loaded = sorted(name for name in COMPILED if name in sys.modules)
    if loaded:
        raise RuntimeError(f"already imported (compiled?): {', '.join(loaded)}")
    if not any(isinstance(finder, PureSourceFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, PureSourceFinder())
