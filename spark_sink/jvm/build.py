"""Build ``binlake-spark.jar`` (``python -m binlake.spark_sink.jvm.build``): ``javac`` of ``src/``, then a zip.

The Spark interfaces the classes implement come from stubs (``stubs/``, compiled apart and left out of the
jar), so the build needs a JDK and nothing of Spark. Run by ``make`` (the ``native`` build) and by ``setup.py``
when it builds a wheel. ``--optional``: without ``javac`` say so and build nothing (the sink then refuses to
start, saying how to build the jar).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
JAR = HERE / "binlake-spark.jar"
RELEASE = "17"
"""The oldest Java Spark 4 runs on."""
_STAMP = (2020, 1, 1, 0, 0, 0)


def _javac() -> str | None:
    """The JDK's compiler: JAVA_HOME's when set (as Spark picks its java), else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").is_file():
        return str(Path(home) / "bin" / "javac")
    return shutil.which("javac")


def _sources(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob("*.java"))


def build(jar: Path = JAR) -> Path:
    """Compile and package the classes into ``jar`` (replaced atomically); return it."""
    javac = _javac()
    if javac is None:
        raise FileNotFoundError("javac not found: install a JDK (17 or later) or set JAVA_HOME to one")
    with tempfile.TemporaryDirectory(prefix="binlake-jvm-") as name:
        tmp = Path(name)
        stubs, classes = tmp / "stubs", tmp / "classes"
        common = [javac, "--release", RELEASE, "-nowarn", "-encoding", "UTF-8"]
        subprocess.run([*common, "-d", str(stubs), *_sources(HERE / "stubs")], check=True)
        subprocess.run([*common, "-cp", str(stubs), "-d", str(classes), *_sources(HERE / "src")], check=True)
        partial = jar.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as out:
            # Fixed time stamps: the same sources give the same jar (the class archive keys on its size).
            manifest = zipfile.ZipInfo("META-INF/MANIFEST.MF", date_time=_STAMP)
            out.writestr(manifest, "Manifest-Version: 1.0\nCreated-By: binlake\n\n", zipfile.ZIP_DEFLATED)
            for path in sorted(classes.rglob("*.class")):
                info = zipfile.ZipInfo(str(path.relative_to(classes)), date_time=_STAMP)
                out.writestr(info, path.read_bytes(), zipfile.ZIP_DEFLATED)
        partial.replace(jar)
    return jar


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m binlake.spark_sink.jvm.build", description=__doc__.split("\n")[0])
    parser.add_argument("--optional", action="store_true", help="without javac, build nothing and succeed")
    args = parser.parse_args(argv)
    if _javac() is None and args.optional:
        print(
            "binlake.spark_sink.jvm: no javac, binlake-spark.jar is not built: `binlake sink` needs it (the event "
            "decoder) and refuses to start until a JDK builds it",
            file=sys.stderr,
        )
        return 0
    build()
    return 0


if __name__ == "__main__":
    sys.exit(main())
