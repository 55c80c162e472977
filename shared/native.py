"""Which modules mypyc compiles, and whether this process runs them compiled.

The modules below are the per-message hot path: parse (every vendor parser and
the toolkit they share) and the event model (the kernel, in Rust, writes
the records: ``shared/kernel``). They are ordinary, strictly typed Python; ``setup.py`` compiles
them with mypyc into C extensions that import in their place (an extension
module next to a ``.py`` file wins the import). ``BINLAKE_COMPILE=0`` at
install time keeps them pure Python.

To add a module: it must pass ``mypy --strict`` (it does, being in this
repository), avoid what mypyc does not compile (classes that subclass builtins
other than ``object`` need ``@mypyc_attr(native_class=False)``), and not be
monkeypatched by tests. Then add it to ``COMPILED`` and run ``make``.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sysconfig
from pathlib import Path
from typing import Final

_ROOT: Final = Path(__file__).resolve().parents[1]

COMPILED: Final = (
    "binlake.shared.errors",
    "binlake.shared.event.values",
    "binlake.shared.event.model",
    "binlake.shared.kafka.records",
    "binlake.shared.normalize.python_codec",
    "binlake.shared.parsing.binary",
    "binlake.shared.parsing.common",
    "binlake.shared.parsing.context",
    "binlake.shared.parsing.ddl",
    "binlake.shared.parsing.errors",
    "binlake.shared.parsing.jsondoc",
    "binlake.shared.parsing.order",
    "binlake.shared.parsing.result",
    "binlake.shared.parsing.rows",
    "binlake.shared.parsing.sqltypes",
    "binlake.shared.parsing.temporal",
    "binlake.shared.parsing.validate",
    "binlake.services.auto.parser",
    "binlake.services.canal_json.flat",
    "binlake.services.canal_json.parser",
    "binlake.services.ckafka_v1.parser",
    "binlake.services.debezium_json.connect",
    "binlake.services.debezium_json.envelope",
    "binlake.services.debezium_json.parser",
    "binlake.services.debezium_smt.parser",
    "binlake.services.drs_avro.dts",
    "binlake.services.drs_avro.parser",
    "binlake.services.drs_json.parser",
    "binlake.services.kafkariver_canal.parser",
    "binlake.services.maxwell_json.parser",
    "binlake.services.maxwell_json.values",
    "binlake.services.ogg_json.parser",
    "binlake.services.ogg_json.values",
    "binlake.services.oms_avro.parser",
    "binlake.services.oms_avro.values",
    "binlake.services.oms_dataworks.parser",
    "binlake.services.oms_default.parser",
    "binlake.services.oms_default.types",
    "binlake.services.oms_shareplex.parser",
)
"""Dotted names of the modules mypyc compiles."""


def compiled_sources() -> list[str]:
    """``COMPILED`` as source paths relative to the repository root (what mypycify takes)."""
    return [name.replace(".", "/") + ".py" for name in COMPILED]


def is_compiled(module_name: str) -> bool:
    """Whether ``module_name`` was imported from a compiled extension rather than its ``.py`` source."""
    module = importlib.import_module(module_name)
    origin = getattr(module, "__file__", None) or ""
    return not origin.endswith(".py")


def status() -> dict[str, bool]:
    """Each compiled-list module and whether it runs compiled in this process."""
    return {name: is_compiled(name) for name in COMPILED}


def ext_suffix() -> str:
    """This Python's extension suffix (``.cpython-311-x86_64-linux-gnu.so``): another Python's builds (``make
    test-pythons``, a venv of its own) sit beside this one's under their own."""
    return str(sysconfig.get_config_var("EXT_SUFFIX"))


def stale() -> list[str]:
    """Modules whose in-place build is older than their source (a rebuild is due: ``make``).

    The code of every compiled module lives in one shared library,
    ``shared/hotpath__mypyc.<this Python's suffix>``; the per-module
    extensions are small shims that mypyc leaves alone when only code changes.
    """
    suffix = ext_suffix()  # this Python's builds only
    libraries = [p for p in [_ROOT / "shared" / f"hotpath__mypyc{suffix}"] if p.exists()]
    out = []
    for name in COMPILED:
        source = _ROOT / (name.replace(".", "/") + ".py")
        built = libraries or [p for p in [source.with_name(source.stem + suffix)] if p.exists()]
        if built and source.exists() and max(b.stat().st_mtime for b in built) < source.stat().st_mtime:
            out.append(name)
    return out


def module_docstring(module_name: str) -> str | None:
    """A module's docstring, read from its source: compiled modules carry none (``__doc__`` is None).

    The source is found from the top-level package (never compiled), not from
    the module's own ``__file__``: mypyc sets that relative to the shared
    library when one compiled module imports another.
    """
    parts = module_name.split(".")
    top = importlib.util.find_spec(parts[0])
    if top is None or top.origin is None:
        return None
    source = Path(top.origin).parent.joinpath(*parts[1:]).with_suffix(".py")
    if not source.exists():
        return importlib.import_module(module_name).__doc__
    return ast.get_docstring(ast.parse(source.read_text("utf-8")), clean=False)
