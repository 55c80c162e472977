"""When a session uses the driver JVM's class archive (spark_sink.class_archive), pure parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from binlake.shared.config.settings import load
from binlake.spark_sink import class_archive
from binlake.spark_sink.settings import SinkSettings

pytestmark = pytest.mark.unit


def _jars(tmp_path: Path) -> list[Path]:
    jar = tmp_path / "jars" / "delta.jar"
    jar.parent.mkdir(parents=True)
    jar.write_bytes(b"PK")
    return [jar]


def _made(settings: SinkSettings, jars: list[Path], content: bytes, recorded: int | None) -> Path:
    archive = class_archive.archive_path(settings, jars)
    assert archive is not None  # the machine running the tests has a java
    archive.parent.mkdir(parents=True, exist_ok=True)
    archive.write_bytes(content)
    if recorded is not None:
        archive.with_suffix(".size").write_text(f"{recorded}\n", "utf-8")
    return archive


def test_a_complete_archive_is_used_quietly(tmp_path: Path) -> None:
    settings = load(SinkSettings, spark_ivy_dir=str(tmp_path))
    jars = _jars(tmp_path)
    archive = _made(settings, jars, b"x" * 10, 10)
    options = class_archive.java_options(settings, jars)
    assert options == f"-XX:SharedArchiveFile={archive} {class_archive.QUIET}"
    assert "-Xshare:auto" in options  # never required: a JVM that cannot map it starts without it


@pytest.mark.parametrize("recorded", [None, 11], ids=["size not recorded yet", "truncated"])
def test_an_incomplete_archive_is_never_used(tmp_path: Path, recorded: int | None) -> None:
    # A truncated archive crashes the JVM (SIGBUS while mapping it): only the recorded size says it is whole.
    settings = load(SinkSettings, spark_ivy_dir=str(tmp_path))
    jars = _jars(tmp_path)
    _made(settings, jars, b"x" * 10, recorded)
    assert class_archive.java_options(settings, jars) is None


def test_the_setting_turns_it_off(tmp_path: Path) -> None:
    settings = load(SinkSettings, spark_ivy_dir=str(tmp_path), spark_class_archive=False)
    jars = _jars(tmp_path)
    _made(settings, jars, b"x" * 10, 10)
    assert class_archive.java_options(settings, jars) is None


def test_other_jars_need_another_archive(tmp_path: Path) -> None:
    settings = load(SinkSettings, spark_ivy_dir=str(tmp_path))
    jars = _jars(tmp_path)
    _made(settings, jars, b"x" * 10, 10)
    jars[0].write_bytes(b"PK and more")  # a jar of another size: another build of it
    assert class_archive.archive_path(settings, jars) != class_archive.archive_path(settings, _jars(tmp_path / "b"))
    assert class_archive.java_options(settings, jars) is None
