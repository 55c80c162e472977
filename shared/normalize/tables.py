"""The table rules (``BINLAKE_INCLUDE_TABLES`` / ``BINLAKE_EXCLUDE_TABLES``) on ``database.table`` names.

No settings import: ``binlake normalize`` starts without pydantic."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """A table pattern on ``db.table`` (shell-style ``*`` and ``?``, any case) as a regular expression."""
    return re.compile("^" + re.escape(pattern).replace(r"\*", ".*").replace(r"\?", ".") + "$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TableFilter:
    include: tuple[re.Pattern[str], ...] = ()
    exclude: tuple[re.Pattern[str], ...] = ()

    @classmethod
    def of(cls, include: Sequence[str] = (), exclude: Sequence[str] = ()) -> TableFilter:
        """The rules from their glob patterns."""
        return cls(tuple(map(pattern_regex, include)), tuple(map(pattern_regex, exclude)))

    @property
    def active(self) -> bool:
        """Whether any rule is set (without rules every table is wanted and nothing is checked)."""
        return bool(self.include or self.exclude)

    def __call__(self, name: str) -> bool:
        """Whether the ``database.table`` named ``name`` goes to the unified topic."""
        if self.include and not any(rule.match(name) for rule in self.include):
            return False
        return not any(rule.match(name) for rule in self.exclude)
