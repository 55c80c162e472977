"""The resolved-jars list that lets a Spark start skip Ivy (spark_sink.session)."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from binlake.shared.config.settings import load
from binlake.spark_sink import session
from binlake.spark_sink.settings import SinkSettings

pytestmark = pytest.mark.unit


def _settings(ivy: Path, **overrides: Any) -> SinkSettings:
    return load(SinkSettings, spark_ivy_dir=str(ivy), **overrides)


class _Jvm:
    """What _remember_resolution reads of a started JVM: spark-submit's spark.jars system property."""

    def __init__(self, jars: str) -> None:
        self.System = SimpleNamespace(getProperty=lambda key: jars if key == "spark.jars" else None)


def _started(jars: str) -> Any:
    return SimpleNamespace(sparkContext=SimpleNamespace(_jvm=_Jvm(jars)))


def _jars(ivy: Path, *names: str) -> list[Path]:
    out = []
    for name in names:
        jar = ivy / "jars" / name
        jar.parent.mkdir(parents=True, exist_ok=True)
        jar.write_bytes(b"PK")
        out.append(jar)
    return out


def test_a_first_start_lists_what_spark_submit_resolved_and_the_next_start_reads_it(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    assert session.resolved_jars(settings) is None  # nothing resolved yet: Ivy runs
    kafka, delta = _jars(tmp_path, "kafka.jar", "delta.jar")
    standalone = _jars(tmp_path, "standalone.jar")
    urls = ",".join(jar.as_uri() for jar in [*standalone, kafka, delta])
    session._remember_resolution(_started(urls), settings, standalone)
    assert session.resolved_jars(settings) == [kafka, delta]  # the standalone jar is added on its own
    listing = next(tmp_path.glob("resolved-*.txt")).read_text("utf-8")
    assert listing == "jars/kafka.jar\njars/delta.jar\n"  # relative: the image copies its Ivy folder


def test_the_list_follows_the_ivy_folder_when_it_is_copied(tmp_path: Path) -> None:
    first = tmp_path / "build-cache"
    (kafka,) = _jars(first, "kafka.jar")
    session._remember_resolution(_started(kafka.as_uri()), _settings(first), [])
    copy = tmp_path / "image"
    shutil.copytree(first, copy)
    assert session.resolved_jars(_settings(copy)) == [copy / "jars" / "kafka.jar"]


def test_a_missing_jar_means_resolving_again(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    kafka, delta = _jars(tmp_path, "kafka.jar", "delta.jar")
    session._remember_resolution(_started(f"{kafka.as_uri()},{delta.as_uri()}"), settings, [])
    delta.unlink()  # an operator cleaned part of the cache
    assert session.resolved_jars(settings) is None


def test_another_package_list_has_a_list_of_its_own(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    (kafka,) = _jars(tmp_path, "kafka.jar")
    session._remember_resolution(_started(kafka.as_uri()), settings, [])
    other = _settings(tmp_path, spark_extra_packages=["org.apache.hadoop:hadoop-aws:3.4.2"])
    assert session.resolved_jars(other) is None


def test_nothing_is_remembered_when_spark_submit_resolved_nothing(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    session._remember_resolution(_started(""), settings, [])
    assert session.resolved_jars(settings) is None
    assert not list(tmp_path.glob("resolved-*"))
