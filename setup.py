"""Builds binlake's native parts (everything else is in pyproject.toml).

- The kernel, ``shared.kernel._kernel`` (Rust, through setuptools-rust and cargo;
  see ``shared/kernel/__init__.py``): it writes every canonical event's Avro value
  and record key, and holds the fast lanes. It is required: without cargo the
  install stops, saying so.
- The hot path compiled by mypyc: the parsers, the parsing toolkit and the event
  model run once per message on the normalizer; compiled by mypyc (the compiler
  that ships with mypy, which already checks this code strictly) they run about
  twice as fast, from the very same source. The list lives in
  ``shared/native.py``, where the tests also read it. ``BINLAKE_COMPILE=0``
  installs them as pure Python (no C compiler needed); the code behaves the same,
  slower.
- The sink's Spark jar (``spark_sink/jvm``, with ``javac``: optional, see
  ``spark_sink/jvm/build.py``).

``make`` builds the native parts in place and rebuilds them when a source changes
(docs/development.md). ``BINLAKE_NATIVE_PART=mypyc``, ``rust`` or ``jvm`` builds one
of them only (``none``: none): ``make`` builds the first two side by side (the C
compile of mypyc's output uses one core).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_py import build_py

sys.path.insert(0, str(Path(__file__).resolve().parent))

from binlake.shared.native import compiled_sources


def _builds(part: str) -> bool:
    """Whether this run builds ``part`` (``mypyc`` or ``rust``): ``BINLAKE_COMPILE=0`` skips mypyc only."""
    if part == "mypyc" and os.environ.get("BINLAKE_COMPILE", "1") == "0":
        return False
    return os.environ.get("BINLAKE_NATIVE_PART", part) == part


def _ext_modules() -> list[Extension]:
    if not _builds("mypyc"):
        return []
    from mypyc.build import mypycify

    # mypycify builds setuptools' Extension when setuptools is imported (it is, above).
    # One shared library, shared/hotpath__mypyc.*.so, inside a package: the editable install's
    # import path covers the packages, not the repository root.
    built = mypycify(compiled_sources(), opt_level="3", debug_level="0", group_name="binlake.shared.hotpath")
    return [ext for ext in built if isinstance(ext, Extension)]


def _rust_extensions() -> list[object]:
    if not _builds("rust"):
        return []
    from setuptools_rust import Binding, RustExtension

    # Cargo's output under build/, not inside the Python package (mypy and setuptools would walk it).
    os.environ.setdefault("CARGO_TARGET_DIR", str(Path(__file__).resolve().parent / "build" / "cargo"))

    return [
        RustExtension(
            "binlake.shared.kernel._kernel",
            path="shared/kernel/Cargo.toml",
            binding=Binding.PyO3,
            optional=False,  # the kernel writes every record: no cargo, no install
            debug=False,  # in-place builds too: the kernel runs once per event
            args=["--locked"],
        )
    ]


class _BuildPy(build_py):
    """Also builds the sink's Spark jar (``spark_sink/jvm``, package data) where a JDK is at hand."""

    def run(self) -> None:
        if os.environ.get("BINLAKE_NATIVE_PART", "jvm") == "jvm":
            from binlake.spark_sink.jvm import build as jvm_build

            jvm_build.main(["--optional"])
        super().run()


setup(ext_modules=_ext_modules(), rust_extensions=_rust_extensions(), cmdclass={"build_py": _BuildPy})
