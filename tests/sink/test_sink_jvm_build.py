"""binlake's jar (spark_sink/jvm/build.py): what it holds, and that a build is reproducible."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from binlake.spark_sink.events import decoder
from binlake.spark_sink.jvm import build

pytestmark = pytest.mark.unit


def test_the_jar_holds_the_functions_and_none_of_the_stubs(tmp_path: Path) -> None:
    jar = build.build(tmp_path / "binlake.jar")
    with zipfile.ZipFile(jar) as archive:
        names = archive.namelist()
    assert "META-INF/MANIFEST.MF" in names
    for name in (decoder.DECODER_CLASS, decoder.DESCRIPTOR_CLASS, decoder.FOLD_CLASS):
        assert name.replace(".", "/") + ".class" in names
    # Spark's own interfaces come from Spark at run time: a stub of them in the jar could shadow them.
    assert not [name for name in names if name.startswith("org/")]


def test_the_same_sources_give_the_same_jar(tmp_path: Path) -> None:
    # The driver's class archive is keyed on the jars' sizes: a rebuild must not look like another jar.
    first = build.build(tmp_path / "a.jar").read_bytes()
    second = build.build(tmp_path / "b.jar").read_bytes()
    assert first == second


def test_without_javac_an_optional_build_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    assert build.main(["--optional"]) == 0
    assert "no javac" in capsys.readouterr().err
    with pytest.raises(FileNotFoundError, match="install a JDK"):
        build.build(tmp_path / "never.jar")
    assert not (tmp_path / "never.jar").exists()
