"""Builds binlake's hot path with mypyc (everything else is in pyproject.toml).

The parsers, the parsing toolkit, the event model and the Avro writer run once
per message on the normalizer; compiled by mypyc (the compiler that ships with
mypy, which already checks this code strictly) they run about twice as fast,
from the very same source: there is no second implementation to keep in step.
The list lives in ``shared/native.py``, where the tests also read it.

``BINLAKE_COMPILE=0`` installs the pure-Python modules instead (no C compiler
needed); the code behaves the same, slower. ``make`` builds the compiled
modules in place and rebuilds them when a compiled source changes
(docs/development.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup

sys.path.insert(0, str(Path(__file__).resolve().parent))

from shared.native import compiled_sources


def _ext_modules() -> list[Extension]:
    if os.environ.get("BINLAKE_COMPILE", "1") == "0":
        return []
    from mypyc.build import mypycify

    # mypycify builds setuptools' Extension when setuptools is imported (it is, above).
    return [ext for ext in mypycify(compiled_sources(), opt_level="3", debug_level="0") if isinstance(ext, Extension)]


setup(ext_modules=_ext_modules())
