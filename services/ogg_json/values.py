"""Untyped GoldenGate row images: ``_isMissing`` markers; typed images via ``untyped_image``."""

from __future__ import annotations

from typing import Any, Final

# The exact-digits guard for nested JSON values is shared with Maxwell (both
# formats are untyped JSON); see its module docstring for the core gaps it covers.
from binlake.services.maxwell_json.values import untyped_image
from binlake.shared.parsing.errors import BAD_FIELD, RejectError

_MISSING_SUFFIX: Final = "_isMissing"


def present_columns(raw: Any, what: str) -> dict[str, Any]:
    """The image without ``COL_isMissing`` markers and without the columns they mark missing.

    With ``includeIsMissingFields=true`` GoldenGate writes, next to each column,
    a boolean telling whether the trail had a value for it. A missing column is
    unknown (compressed update, unlogged column), not NULL, so it is left out.
    A field counts as a marker only when it is a boolean whose base column is in
    the same image, so a real column that happens to end in ``_isMissing``
    survives.
    """
    if not isinstance(raw, dict):
        raise RejectError(BAD_FIELD, f"{what} must be a JSON object of column values")
    if not any(name.endswith(_MISSING_SUFFIX) for name in raw):
        return raw
    markers = {
        name[: -len(_MISSING_SUFFIX)]: value
        for name, value in raw.items()
        if name.endswith(_MISSING_SUFFIX) and isinstance(value, bool) and name[: -len(_MISSING_SUFFIX)] in raw
    }
    return {
        name: value
        for name, value in raw.items()
        if markers.get(name) is not True
        and not (name.endswith(_MISSING_SUFFIX) and name[: -len(_MISSING_SUFFIX)] in markers)
    }


__all__ = ["present_columns", "untyped_image"]
