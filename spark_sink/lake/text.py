"""Plain-text rendering shared by ``binlake lake show`` and ``binlake lake verify``: grids and durations."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any


def grid(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces; numbers right-aligned; None prints as ``-``."""
    cells = [[_cell(value) for value in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))
    numeric = [
        bool(rows) and all(isinstance(row[i], int | float) or row[i] is None for row in rows)
        for i in range(len(headers))
    ]

    def line(values: Sequence[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return "\n".join([line(list(headers)), *(line(row) for row in cells)])


def _cell(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S") + ("Z" if value.utcoffset() is not None else "")
    return str(value)


def duration(seconds: float | None) -> str | None:
    """``12.3 s``, ``4 min 05 s``, ``3 h 12 min``, ``2 d 04 h``; None stays None (unknown)."""
    if seconds is None:
        return None
    sign = "-" if seconds < 0 else ""
    s = abs(seconds)
    if s < 60:
        return f"{sign}{s:.1f} s"
    whole = int(s)
    if whole < 3600:
        return f"{sign}{whole // 60} min {whole % 60:02d} s"
    if whole < 86400:
        return f"{sign}{whole // 3600} h {whole % 3600 // 60:02d} min"
    return f"{sign}{whole // 86400} d {whole % 86400 // 3600:02d} h"


def to_json(document: Any) -> str:
    """JSON for machines: datetimes as ISO-8601 strings, keys in the order built."""
    return json.dumps(document, default=_json_default, indent=2)


def _json_default(value: object) -> object:
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
