"""Where a lake URI lives on this machine's file system, for the readers that work without Spark.

DuckDB (``binlake lake show``, a changelog batch's statistics) reads local files directly; a lake on an
object store (``s3a://``, ``gs://``, ``abfss://``) is read through Spark instead.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import unquote, urlparse


def local_root(uri: str) -> Path | None:
    """The file-system path of a lake URI (a path or ``file:``), None for another scheme (``s3a://``)."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme and len(parsed.scheme) > 1:  # "C:" is a drive, not a scheme
        return None
    return Path(uri).expanduser().resolve()
