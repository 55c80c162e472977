"""binlake's jar: a few classes built from ``src/`` with the JDK's ``javac`` (``build``), loaded by every
sink session.

``EventDecoder`` decodes the canonical event and ``EventDescriptor`` hashes its
column descriptor (``spark_sink.events.decoder``); ``KeyFold`` is the mirror
batch's fold of a key's events (``spark_sink.mirror.fold``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

JAR: Final = Path(__file__).resolve().parent / "binlake-spark.jar"


def built_jar() -> Path | None:
    """The built jar, or None where it was not built (no JDK at build time)."""
    return JAR if JAR.is_file() else None
