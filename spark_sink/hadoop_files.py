"""Files through Hadoop's FileSystem (local paths, s3a://, abfss://... alike), from the driver.

For the few small files the sink reads or writes itself rather than through
Spark or Delta: a checkpoint's id file and offset log, a Delta commit's JSON.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession


class HadoopFiles:
    """Small files under any URI the session's Hadoop configuration can reach."""

    def __init__(self, spark: SparkSession) -> None:
        self.jvm: Any = spark.sparkContext._jvm  # py4j gateway: untyped by nature
        java_context: Any = spark.sparkContext._jsc
        self.conf: Any = java_context.hadoopConfiguration()

    def _path(self, uri: str) -> tuple[Any, Any]:
        path = self.jvm.org.apache.hadoop.fs.Path(uri)
        return path, path.getFileSystem(self.conf)

    def exists(self, uri: str) -> bool:
        path, fs = self._path(uri)
        return bool(fs.exists(path))

    def read(self, uri: str) -> str | None:
        """The file's text (UTF-8); None if there is no such file."""
        path, fs = self._path(uri)
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            return str(self.jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def names(self, uri: str) -> list[str]:
        """The names of the entries of a folder (none if there is no such folder)."""
        path, fs = self._path(uri)
        if not fs.exists(path):
            return []
        return [str(status.getPath().getName()) for status in fs.listStatus(path)]

    def create(self, uri: str, text: str) -> None:
        """Write a new file; fails if it exists (two sinks starting on one checkpoint: one wins)."""
        path, fs = self._path(uri)
        stream = fs.create(path, False)
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()

    def replace(self, uri: str, text: str) -> None:
        """Write a file whole, replacing any: written beside it, then renamed over it, so a reader finds the old
        text or the new, never a part (an object store's rename is a copy of one small object)."""
        path, fs = self._path(uri)
        staged = self.jvm.org.apache.hadoop.fs.Path(f"{uri}.tmp")
        stream = fs.create(staged, True)
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()
        fs.delete(path, False)
        if not fs.rename(staged, path):
            raise OSError(f"could not rename {uri}.tmp to {uri}")

    def delete(self, uri: str) -> None:
        """Remove a file or a folder with everything in it (nothing if there is none)."""
        path, fs = self._path(uri)
        fs.delete(path, True)
