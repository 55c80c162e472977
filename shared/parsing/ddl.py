"""Classifying DDL statements into the canonical ``ddl.kind``."""

from __future__ import annotations

import re
from typing import Final

KINDS: Final = frozenset(
    {
        "CREATE_TABLE", "ALTER_TABLE", "DROP_TABLE", "RENAME_TABLE", "TRUNCATE_TABLE",
        "CREATE_DATABASE", "DROP_DATABASE", "CREATE_INDEX", "DROP_INDEX", "OTHER",
    }
)  # fmt: skip

# Vendor DDL type names (Canal/CKafka/DataWorks ``type``, OMS ``ddlType``) to kinds.
_VENDOR: Final = {
    "CREATE": "CREATE_TABLE",
    "ALTER": "ALTER_TABLE",
    "ERASE": "DROP_TABLE",
    "RENAME": "RENAME_TABLE",
    "TRUNCATE": "TRUNCATE_TABLE",
    "CINDEX": "CREATE_INDEX",
    "DINDEX": "DROP_INDEX",
    "CREATE_TABLE": "CREATE_TABLE",
    "ALTER_TABLE": "ALTER_TABLE",
    "DROP_TABLE": "DROP_TABLE",
    "RENAME_TABLE": "RENAME_TABLE",
    "TRUNCATE_TABLE": "TRUNCATE_TABLE",
    "CREATE_DATABASE": "CREATE_DATABASE",
    "DROP_DATABASE": "DROP_DATABASE",
    "CREATE_INDEX": "CREATE_INDEX",
    "DROP_INDEX": "DROP_INDEX",
}

_SQL_PATTERNS: Final = [
    (re.compile(r"^create\s+(?:temporary\s+)?table\b"), "CREATE_TABLE"),
    (re.compile(r"^alter\s+(?:online\s+|ignore\s+)*table\b"), "ALTER_TABLE"),
    (re.compile(r"^drop\s+(?:temporary\s+)?table\b"), "DROP_TABLE"),
    (re.compile(r"^rename\s+table\b"), "RENAME_TABLE"),
    (re.compile(r"^truncate\b"), "TRUNCATE_TABLE"),
    (re.compile(r"^create\s+(?:database|schema)\b"), "CREATE_DATABASE"),
    (re.compile(r"^drop\s+(?:database|schema)\b"), "DROP_DATABASE"),
    (re.compile(r"^create\s+(?:unique\s+|fulltext\s+|spatial\s+|bitmap\s+)?index\b"), "CREATE_INDEX"),
    (re.compile(r"^drop\s+index\b"), "DROP_INDEX"),
]
_COMMENT: Final = re.compile(r"^(?:\s+|/\*.*?\*/|--[^\n]*\n|#[^\n]*\n)*", re.S)


def ddl_kind(sql: str, vendor_type: str | None = None) -> str:
    """The kind from the SQL text; the vendor's type decides only where the text is unclear."""
    text = _COMMENT.sub("", sql, count=1).lower()
    for pattern, kind in _SQL_PATTERNS:
        if pattern.match(text):
            return kind
    if vendor_type is not None:
        return _VENDOR.get(vendor_type.upper(), "OTHER")
    return "OTHER"
