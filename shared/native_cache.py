"""A machine-wide cache of the compiled hot path, keyed by everything that goes into it.

``make`` compiles the mypyc modules (``native.COMPILED``) and the Rust kernel in place, minutes on two
cores. A new clone of the same sources on the same machine (CI's) would compile the same bytes again, so
``make`` first asks this cache: ``key`` hashes every source a build reads (the Python sources mypyc
type-checks the compiled modules against, the Rust crate, ``setup.py`` and ``pyproject.toml`` with its pinned
build tools), the interpreter, the installed mypy and setuptools-rust, and rustc's version; ``restore KEY``
copies a build with that key into place (exit 1: none); ``store KEY`` keeps the build just made. A change
to any of those inputs is a new key, so a stale build is never restored. The cache lives in
``BINLAKE_NATIVE_CACHE`` (default ``~/.cache/binlake/native``; empty: no cache) and keeps the newest
``KEEP`` builds.

    python -m binlake.shared.native_cache key|restore KEY|store KEY
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Final

from binlake.shared.native import compiled_sources, ext_suffix

ROOT: Final = Path(__file__).resolve().parents[1]
KEEP: Final = 6
"""Builds kept (the newest by use): each Python's (make test-pythons) and a few branches', 4 MB each."""
INPUT_FOLDERS: Final = ("shared", "services", "spark_sink")
INPUT_SUFFIXES: Final = frozenset({".py", ".pyi", ".rs", ".toml", ".lock", ".typed"})
TOOLS: Final = ("mypy", "setuptools-rust", "setuptools")


def cache_dir() -> Path | None:
    """Where builds are kept, or None when the cache is off (``BINLAKE_NATIVE_CACHE`` empty)."""
    configured = os.environ.get("BINLAKE_NATIVE_CACHE", str(Path.home() / ".cache" / "binlake" / "native"))
    return Path(configured).expanduser() if configured else None


def inputs() -> list[Path]:
    """Every file a build reads, relative to the repository, sorted (compiled outputs left out)."""
    found = [ROOT / "setup.py", ROOT / "pyproject.toml", ROOT / "binlake" / "__init__.py"]
    for folder in INPUT_FOLDERS:
        found += [p for p in (ROOT / folder).rglob("*") if p.suffix in INPUT_SUFFIXES and p.is_file()]
    # Not a cargo target folder (a `cargo build` run in the crate): generated sources that change each build.
    return sorted(p.relative_to(ROOT) for p in found if "target" not in p.parts)


def _rustc() -> str:
    try:
        return subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=False).stdout
    except OSError:
        return "no rustc"


def key() -> str:
    """The hash of a build's inputs: sources, interpreter, build tools."""
    digest = hashlib.sha256()
    for path in inputs():
        digest.update(str(path).encode() + b"\0" + (ROOT / path).read_bytes() + b"\0")
    digest.update(f"{sys.version}\0{ext_suffix()}\0{platform.machine()}\0{_rustc()}\0".encode())
    for tool in TOOLS:
        try:
            digest.update(f"{tool}={importlib.metadata.version(tool)}\0".encode())
        except importlib.metadata.PackageNotFoundError:
            digest.update(f"{tool}=none\0".encode())
    return digest.hexdigest()[:32]


def outputs() -> list[Path]:
    """The files a build leaves in place (relative to the repository): each compiled module's extension,
    mypyc's shared group modules, and the kernel."""
    ext = ext_suffix()
    made = [Path(source).with_suffix("") for source in compiled_sources()]
    found = [ROOT / f"{stem}{ext}" for stem in made]
    found += [*ROOT.glob(f"*__mypyc{ext}"), *(ROOT / "shared").glob(f"*__mypyc{ext}")]
    found.append(ROOT / "shared" / "kernel" / f"_kernel{ext}")
    return sorted({p.relative_to(ROOT) for p in found})


def restore(build: str) -> bool:
    """Copy the build ``build`` into place; False when the cache holds none (or is off)."""
    base = cache_dir()
    kept = None if base is None else base / build
    if kept is None or not (kept / "complete").is_file():
        return False
    for path in (kept / "complete").read_text("utf-8").splitlines():
        target = ROOT / path
        partial = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        # Written now (not the kept file's time): a build is newer than the sources it was made from, as
        # ``native.stale`` (and make) expect of a fresh clone's sources.
        shutil.copyfile(kept / "files" / path, partial)
        shutil.copymode(kept / "files" / path, partial)
        partial.replace(target)  # a running process keeps the file it loaded
    os.utime(kept)  # newest by use
    return True


def store(build: str) -> None:
    """Keep the build just made (only a complete one), then drop all but the ``KEEP`` newest."""
    base = cache_dir()
    if base is None:
        return
    made = outputs()
    missing = [str(p) for p in made if not (ROOT / p).is_file()]
    if missing:
        # A part was not built (BINLAKE_COMPILE=0: no mypyc modules): the next build tries again.
        print(f"native_cache: not keeping a build without {', '.join(missing)}", file=sys.stderr)
        return
    partial = base / f"{build}.{os.getpid()}.tmp"
    for path in made:
        (partial / "files" / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, partial / "files" / path)
    (partial / "complete").write_text("".join(f"{p}\n" for p in made), "utf-8")
    final = base / build
    if final.exists():
        shutil.rmtree(partial)  # another clone stored the same build meanwhile
    else:
        partial.rename(final)
    builds = sorted((p for p in base.iterdir() if (p / "complete").is_file()), key=lambda p: p.stat().st_mtime)
    for old in builds[:-KEEP]:
        shutil.rmtree(old, ignore_errors=True)


def main(argv: list[str]) -> int:
    if argv == ["key"]:
        print(key())
        return 0
    if len(argv) == 2 and argv[0] == "restore":
        return 0 if restore(argv[1]) else 1
    if len(argv) == 2 and argv[0] == "store":
        store(argv[1])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
