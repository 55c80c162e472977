"""The driver JVM's class-data-sharing archive: Spark starts about 4 s sooner, and its first jobs take 4 s less.

A JVM start loads, verifies and links some 20,000 classes of Spark, Delta and
their dependencies; a dynamic CDS archive (JDK 13+, ``-XX:ArchiveClassesAtExit``)
holds them already parsed and verified, mapped into memory at the next start.
Measured on the 2-core development machine: session start 13.3-14.7 s ->
9.3 s, a first aggregation and Delta write 23.8-24.4 s -> 19.2-19.5 s.

``python -m binlake.spark_sink.class_archive`` (run by ``make``) makes one: a child
process starts a session with the sink's settings, runs a small workload of
the kinds the sink runs (an aggregation, Delta create / MERGE / read, the
event decoder), and its JVM writes the archive when it exits; the parent then
moves the finished file into ``<Ivy folder>/cds/`` with its size beside it.
``build_session`` passes ``-XX:SharedArchiveFile`` when an archive made for
this Java, this pyspark and these jars exists there, complete (its size as
recorded: a truncated archive crashes the JVM, so a partial one is never
used). A JVM that cannot use an archive (another Java build, another class
path) starts without it, silently (``-Xshare:auto``, its CDS logging off).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any, Final

from binlake.spark_sink.settings import SinkSettings

ARCHIVE_DIR: Final = "cds"
QUIET: Final = "-Xshare:auto -Xlog:cds=off -Xlog:cds+dynamic=off -Xlog:class+path=off"
"""How an archive is used: never required, and a mismatch is no message on the terminal."""


def _java() -> Path | None:
    """The java spark-submit runs (its bin/spark-class: JAVA_HOME's when set, else the PATH's)."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home, "bin", "java") if home else (Path(which) if (which := shutil.which("java")) else None)
    return None if found is None or not found.exists() else found.resolve()


def key(jars: list[Path]) -> str | None:
    """What an archive is valid for: the Java binary (path, size, time), pyspark's version and the jars."""
    java = _java()
    if java is None:
        return None
    stat = java.stat()
    parts: list[object] = [str(java), stat.st_size, stat.st_mtime_ns, version("pyspark")]
    parts += sorted((str(jar), jar.stat().st_size) for jar in jars if jar.exists())
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]


def archive_path(settings: SinkSettings, jars: list[Path]) -> Path | None:
    found = key(jars)
    if found is None:
        return None
    return Path(settings.spark_ivy_dir).expanduser().resolve() / ARCHIVE_DIR / f"driver-{found}.jsa"


def usable(archive: Path) -> bool:
    """True when ``archive`` is complete: its recorded size matches (written only after the JVM exited)."""
    try:
        recorded = int(archive.with_suffix(".size").read_text("utf-8").strip())
        return archive.stat().st_size == recorded
    except (OSError, ValueError):
        return False


def java_options(settings: SinkSettings, jars: list[Path]) -> str | None:
    """The driver's JVM options that use this machine's archive for ``jars``; None when there is none."""
    if not settings.spark_class_archive:
        return None
    archive = archive_path(settings, jars)
    if archive is None or not usable(archive):
        return None
    return f"-XX:SharedArchiveFile={archive} {QUIET}"


def _train(target: Path) -> None:
    """The child: a session whose JVM writes ``target`` at exit, after a workload like the sink's."""
    import tempfile

    from delta.tables import DeltaTable
    from pyspark.sql import functions as F

    from binlake.shared.codec import avro
    from binlake.shared.config.settings import load
    from binlake.shared.event.model import ChangeEvent, Columns, Origin, Source
    from binlake.spark_sink.events import decoder
    from binlake.spark_sink.session import DRIVER_OPTIONS, build_session

    settings = load(SinkSettings, spark_class_archive=False, log_level="ERROR")
    conf = dict(settings.spark_conf)
    conf[DRIVER_OPTIONS] = f"-XX:ArchiveClassesAtExit={target} {QUIET} {conf.get(DRIVER_OPTIONS, '')}".strip()
    spark = build_session(settings.model_copy(update={"spark_conf": conf}), app_name="binlake-class-archive")
    with tempfile.TemporaryDirectory(prefix="binlake-class-archive-") as folder:
        uri = Path(folder, "t").as_uri()
        binary = "encode(CAST(id AS STRING), 'UTF-8') AS b"
        rows = spark.range(1000).selectExpr("id", "CAST(id % 7 AS STRING) AS k", binary)
        rows.groupBy("k").count().collect()
        rows.write.format("delta").save(uri)
        updates = spark.range(500, 1500).selectExpr("id", "'x' AS k", binary)
        (
            DeltaTable.forPath(spark, uri)
            .alias("t")
            .merge(updates.alias("s"), "t.id = s.id")
            .whenMatchedUpdateAll()
            .whenNotMatchedInsertAll()
            .execute()
        )
        spark.read.format("delta").load(uri).agg(F.max("id")).collect()
        event = ChangeEvent(
            op="INSERT",
            source=Source("canal-json", "mysql", "d", None, "t"),
            order_key="0",
            ts_ms=0,
            ingest_ts_ms=None,
            primary_key=["id"],
            columns=Columns([]),
            before=None,
            after={"id": 1},
            changed_columns=None,
            ddl=None,
            origin=Origin("t", 0, 0, 0),
        )
        message = spark.range(10).select(F.lit(avro.encode(event)).alias("value"))
        message.select(decoder.decoded("value").alias("e")).collect()
    gateway: Any = spark.sparkContext._gateway
    jvm_process: subprocess.Popen[bytes] = gateway.proc
    spark.stop()
    # The JVM writes the archive as it exits, which it does when its stdin closes (as at this process's
    # exit); waited for here, so the parent finds the file complete when this process has ended.
    assert jvm_process.stdin is not None
    jvm_process.stdin.close()
    jvm_process.wait()


def build(settings: SinkSettings, jars: list[Path]) -> Path | None:
    """Make this machine's archive for ``jars`` unless it exists; its path (None: no Java found)."""
    archive = archive_path(settings, jars)
    if archive is None:
        return None
    if usable(archive):
        return archive
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(f".{os.getpid()}.tmp")
    partial.unlink(missing_ok=True)
    done = subprocess.run(
        [sys.executable, "-m", "binlake.spark_sink.class_archive", "--train", str(partial)], check=False
    )
    if done.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"no class archive was written (exit status {done.returncode})")
    size = partial.stat().st_size
    partial.replace(archive)
    archive.with_suffix(".size").write_text(f"{size}\n", "utf-8")  # last: the archive is complete
    for stale in archive.parent.glob(f"{archive.stem}.*.tmp"):
        # A training run stopped before its move (its JVM may have gone on writing): gone after ten minutes.
        if time.time() - stale.stat().st_mtime > 600:
            stale.unlink(missing_ok=True)
    return archive


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--train"] and len(args) == 2:
        _train(Path(args[1]))
        return 0
    from binlake.shared.config.settings import load
    from binlake.spark_sink.session import session_jars

    settings = load(SinkSettings)
    jars = session_jars(settings)
    if jars is None:
        # The packages are not resolved yet: a first start resolves them (and lists them), then the archive.
        from binlake.spark_sink.session import build_session

        build_session(settings.model_copy(update={"spark_class_archive": False})).stop()
        jars = session_jars(settings)
    made = build(settings, jars or [])
    print(f"class archive: {made}" if made else "class archive: no java on PATH")
    return 0


if __name__ == "__main__":
    sys.exit(main())
