"""The root of binlake's errors.

Like aiokafka's errors, every error says whether retrying the same operation can
succeed (``retriable``), so a runtime can choose between backing off and
dead-lettering without knowing each class.
"""

from __future__ import annotations


class BinlakeError(Exception):
    """Root of every error binlake raises on purpose."""

    retriable: bool = False


class ConfigError(BinlakeError):
    """The configuration is invalid; the message says which setting and what to do."""
