"""The lake tools' error, in a module without Spark so ``binlake lake show`` can raise it without importing pyspark."""

from __future__ import annotations

from binlake.shared.errors import BinlakeError


class LakeError(BinlakeError):
    """The lake, a table or the topic is not there; the message says what to check (``binlake`` exits 2)."""
