"""binlake's jar: a few classes built from ``src/`` with the JDK's ``javac`` (``build``), loaded by every
sink session.

``EventDecoder`` decodes the canonical event (``spark_sink.events.decoder``).
``TaskConfPlugin`` gives each Spark task one SQL configuration for its whole
run (see its Java doc for why: Spark 4.2 builds a new one per field of some
rows it makes). The session turns it on (``spark.plugins``) unless
``BINLAKE_SINK_SPARK_TASK_CONF_PLUGIN`` is false; without it Spark behaves the
same, slower.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

PLUGIN_CLASS: Final = "io.binlake.spark.TaskConfPlugin"
JAR: Final = Path(__file__).resolve().parent / "binlake-spark.jar"


def plugin_jar() -> Path | None:
    """The built jar, or None where it was not built (no JDK at build time)."""
    return JAR if JAR.is_file() else None
