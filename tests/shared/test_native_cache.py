"""The compiled hot path's cache (shared/native_cache.py): what it keys on, keeps and puts back."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.shared import native_cache
from binlake.shared.native import compiled_sources

pytestmark = pytest.mark.unit


def test_the_key_covers_every_compiled_source_and_the_build_files() -> None:
    read = {str(p) for p in native_cache.inputs()}
    # The compiled modules by their real paths (binlake/ links the folders), the crate, the build's own files.
    assert {s.removeprefix("binlake/") for s in compiled_sources()} <= read
    assert {"setup.py", "pyproject.toml", "shared/native.py", "shared/kernel/Cargo.lock"} <= read
    assert native_cache.key() == native_cache.key()


def test_every_output_is_kept_and_put_back_byte_for_byte(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = native_cache.outputs()
    if not all((native_cache.ROOT / p).is_file() for p in made):
        pytest.skip("this tree holds no complete build (BINLAKE_COMPILE=0 or no cargo)")
    monkeypatch.setenv("BINLAKE_NATIVE_CACHE", str(tmp_path))
    assert not native_cache.restore("absent")
    native_cache.store("one")
    kept = tmp_path / "one"
    assert sorted((kept / "complete").read_text().split()) == sorted(str(p) for p in made)
    for path in made:
        assert (kept / "files" / path).read_bytes() == (native_cache.ROOT / path).read_bytes()
    assert native_cache.restore("one")
    for name in ("two", "three", "four", "five", "six", "seven"):
        native_cache.store(name)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["two", "three", "four", "five", "six", "seven"])


def test_an_empty_setting_turns_the_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BINLAKE_NATIVE_CACHE", "")
    assert native_cache.cache_dir() is None
    assert not native_cache.restore(native_cache.key())
