"""The sink's SparkSession: connector packages from Maven Central (Ivy-cached), Delta, UTC."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlparse

from py4j.java_gateway import JavaClass
from pyspark.sql import SparkSession

from binlake.shared.errors import BinlakeError
from binlake.spark_sink import class_archive, jvm
from binlake.spark_sink.events import decoder
from binlake.spark_sink.settings import SinkSettings

DRIVER_OPTIONS = "spark.driver.extraJavaOptions"
KNOWN_MISSING: Final = "io.binlake.spark.KnownMissingClasses"
CODEGEN_CACHE_ENTRIES: Final = 4000
"""Generated classes Spark keeps for reuse (``spark.sql.codegen.cache.maxEntries``; Spark's default: 100)."""
PYSPARK_PYTHON = "PYSPARK_PYTHON"
REDACTION = r"(?i)secret|password|token|access[.]?key|jaas|keystore[.]key"
"""``spark.redaction.regex``: Spark hides a setting's or a data source option's value where its name or value
matches (logs, plans, listener events). Spark's default, plus the Kafka client's key (``kafka.ssl.keystore.key``,
its PEM passed inline: spark_sink.events.pem) and any JAAS configuration, whatever its login module holds."""


class SessionError(BinlakeError):
    """The Spark session or its packages could not be prepared."""


def ivy_dir(settings: SinkSettings) -> Path:
    return Path(settings.spark_ivy_dir).expanduser().resolve()


def _ivy_jar() -> Path:
    import pyspark

    jars = sorted((Path(pyspark.__file__).parent / "jars").glob("ivy-*.jar"))
    if not jars:
        raise SessionError("pyspark ships no ivy jar: cannot resolve spark_standalone_packages")
    return jars[-1]


def standalone_jars(settings: SinkSettings) -> list[Path]:
    """Resolve each standalone coordinate (no transitive dependencies) into the Ivy cache; return the jars."""
    out: list[Path] = []
    base = ivy_dir(settings)
    target_dir = base / "standalone"
    for coordinate in settings.spark_standalone_packages:
        parts = coordinate.split(":")
        if len(parts) != 3:
            raise SessionError(f"not a group:artifact:version coordinate: {coordinate!r}")
        group, artifact, version = parts
        jar = target_dir / f"{group}_{artifact}-{version}.jar"
        if not jar.exists():
            pattern = str(target_dir / "[organisation]_[artifact]-[revision](-[classifier]).[ext]")
            command = ["java", "-jar", str(_ivy_jar()), "-dependency", group, artifact, version]
            command += ["-notransitive", "-confs", "default", "-cache", str(base / "cache"), "-retrieve", pattern]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0 or not jar.exists():
                tail = (done.stdout + done.stderr)[-2000:]
                raise SessionError(f"could not resolve {coordinate} from Maven Central:\n{tail}")
        out.append(jar)
    return out


_IVY_SETTINGS = """<ivysettings>
  <!-- Written by binlake: Maven Central only. Spark's built-in chain also reads
       ~/.m2, where Maven may have left a POM without its jar (the dev broker's
       build does), and then fails with "download failed: ...jar". -->
  <settings defaultResolver="central"/>
  <resolvers>
    <ibiblio name="central" m2compatible="true"/>
  </resolvers>
</ivysettings>
"""


def ivy_settings_file(base: Path) -> Path:
    """The Ivy settings that ``spark.jars.packages`` resolves with (written into the Ivy folder)."""
    path = base / "ivysettings.xml"
    if not path.exists() or path.read_text("utf-8") != _IVY_SETTINGS:
        path.write_text(_IVY_SETTINGS, "utf-8")
    return path


def _resolution_file(settings: SinkSettings, base: Path) -> Path:
    """Where the jars of this package list's last resolution are listed (one file per list and Ivy settings)."""
    key = json.dumps([settings.spark_packages, settings.spark_jars_excludes, _IVY_SETTINGS])
    return base / f"resolved-{hashlib.sha256(key.encode()).hexdigest()[:16]}.txt"


def resolved_jars(settings: SinkSettings) -> list[Path] | None:
    """The jars an earlier start resolved ``spark_packages`` into, if every one is still in the Ivy cache.

    Ivy's resolution costs 4-7 s of every JVM start even with everything cached; with this list the
    session hands Spark the jars themselves (``spark.jars``) and skips it.
    """
    base = ivy_dir(settings)
    try:
        # Relative to the Ivy folder: the sink image resolves in a build cache and copies it elsewhere.
        jars = [base / line for line in _resolution_file(settings, base).read_text("utf-8").splitlines() if line]
    except OSError:
        return None
    if not jars or not all(jar.is_file() for jar in jars):
        return None  # an operator cleaned the cache: resolve again
    return jars


def _relative(jar: Path, base: Path) -> Path:
    try:
        return jar.resolve().relative_to(base)
    except ValueError:
        return jar  # outside the Ivy folder (absolute: base / jar is jar)


def _remember_resolution(spark: SparkSession, settings: SinkSettings, own: list[Path]) -> None:
    # spark-submit puts the jars it resolved into the JVM's spark.jars system property (the session's own
    # spark.jars, from the builder, holds only ``own``: the standalone ones and binlake's).
    gateway = spark.sparkContext._jvm
    assert gateway is not None
    listed = str(gateway.System.getProperty("spark.jars") or "")
    skip = {jar.resolve() for jar in own}
    jars = [Path(unquote(urlparse(url).path)) for url in listed.split(",") if url]
    jars = [jar for jar in jars if jar.resolve() not in skip]
    if not jars or not all(jar.is_file() for jar in jars):
        return  # nothing usable to remember: the next start resolves again
    base = ivy_dir(settings)
    listing = _resolution_file(settings, base)
    partial = listing.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text("".join(f"{_relative(jar, base)}\n" for jar in jars), "utf-8")
    partial.replace(listing)  # atomic: a concurrent start reads the old list or the new one


def own_jars() -> list[Path]:
    """binlake's own jar (``spark_sink.jvm``): the event decoder and the mirror's fold."""
    jar = jvm.built_jar()
    if jar is None:
        raise SessionError(
            f"{jvm.JAR} is missing: the sink decodes events with it. Build it with "
            "`python -m binlake.spark_sink.jvm.build` (needs a JDK, 17 or later), or reinstall binlake with one"
        )
    return [jar]


def session_jars(settings: SinkSettings) -> list[Path] | None:
    """The jars a session loads (standalone, resolved packages, binlake's jar); None until the packages are
    resolved."""
    resolved = resolved_jars(settings)
    return None if resolved is None else standalone_jars(settings) + resolved + own_jars()


def build_session(settings: SinkSettings, *, app_name: str = "binlake-sink") -> SparkSession:
    """A SparkSession with the Kafka source, Delta and binlake's event decoder; the session time zone is UTC.

    The first start resolves the packages with Ivy (``spark.jars.packages``) and lists the jars it got in
    the Ivy folder; later starts with the same packages load those jars directly.
    """
    base = ivy_dir(settings)
    base.mkdir(parents=True, exist_ok=True)
    standalone = standalone_jars(settings)
    resolved = resolved_jars(settings)
    builder = SparkSession.builder.appName(app_name).master(settings.master)
    if resolved is None:
        builder = (
            builder.config("spark.jars.packages", ",".join(settings.spark_packages))
            .config("spark.jars.ivy", str(base))
            .config("spark.jars.ivySettings", str(ivy_settings_file(base)))
        )
        if settings.spark_jars_excludes:
            builder = builder.config("spark.jars.excludes", ",".join(settings.spark_jars_excludes))
    binlake_jars = own_jars()
    jars = standalone + (resolved or []) + binlake_jars
    if jars:
        builder = builder.config("spark.jars", ",".join(str(jar) for jar in jars))
    java_options = class_archive.java_options(settings, jars) if resolved is not None else None
    builder = (
        builder.config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
        .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
        .config("spark.sql.shuffle.partitions", str(settings.shuffle_partitions))
        # Delta rebuilds a table's state with 50 partitions by default: a fixed cost per table and batch
        # that dominates on mirrors of a few thousand rows.
        .config("spark.databricks.delta.snapshotPartitions", str(settings.shuffle_partitions))
        # Every MERGE source of the sink is already a local checkpoint (plain rows, read at pinned
        # versions), so Delta's own copy of it ("auto") would be one more job per table and batch.
        .config("spark.databricks.delta.merge.materializeSource", "none")
        # Spark keeps the classes it generates for 100 plans by default: fewer than one mirror batch of 8
        # tables plans, so every batch compiled about 170 of them again (Janino, then the JIT), measured
        # 12% of a warm mirror batch's wall time. A few thousand fit the plans of hundreds of tables.
        .config("spark.sql.codegen.cache.maxEntries", str(CODEGEN_CACHE_ENTRIES))
        # The changelog and mirror queries run their jobs in pools of their own (job._started): fair
        # sharing keeps a long mirror MERGE from queueing the changelog's tasks behind it.
        .config("spark.scheduler.mode", "FAIR")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.redaction.regex", REDACTION)
    )
    if settings.master.startswith("local") and not os.environ.get(PYSPARK_PYTHON):
        # Local Python workers run the sink's own interpreter: pyspark's default, the first python3 on PATH,
        # may be another version (Spark refuses to mix minor versions) or lack binlake's packages. pyspark
        # reads the variable when the context starts (spark.pyspark.python is for spark-submit only).
        os.environ[PYSPARK_PYTHON] = sys.executable
    for key, value in settings.spark_conf.items():
        builder = builder.config(key, value)
    if java_options is not None:
        # Before the user's own options (theirs win where both set one).
        own = settings.spark_conf.get(DRIVER_OPTIONS, "")
        builder = builder.config(DRIVER_OPTIONS, f"{java_options} {own}".strip())
    spark = builder.getOrCreate()
    if resolved is None:
        _remember_resolution(spark, settings, standalone + binlake_jars)
    spark.sparkContext.setLogLevel(settings.log_level)
    decoder.register(spark)
    _remember_missing_classes(spark)
    return spark


def _remember_missing_classes(spark: SparkSession) -> None:
    """py4j's class lookups remember the names that are no class: each searches every jar (``KnownMissingClasses``
    in binlake's jar)."""
    strategy = getattr(spark.sparkContext._jvm, KNOWN_MISSING)
    if not isinstance(strategy, JavaClass):  # a jar built before the class: py4j took its name for a package
        raise SessionError(f"{jvm.JAR} has no {KNOWN_MISSING}: rebuild it (`python -m binlake.spark_sink.jvm.build`)")
    strategy.install()
