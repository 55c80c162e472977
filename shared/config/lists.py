"""How a list setting is written in an environment variable: a JSON array or comma-separated items."""

from __future__ import annotations

import json


def comma_list(value: object) -> object:
    """``a, b`` -> ``["a", "b"]``; a JSON array (``["a,b"]``, for an item holding a comma) as is; other values
    (already a list, or a JSON value pydantic reports on) untouched. For ``mode="before"`` validators."""
    if isinstance(value, str):
        if value.lstrip().startswith("["):
            return json.loads(value)
        return [item.strip() for item in value.split(",") if item.strip()]
    return value
