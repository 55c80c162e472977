"""Lazily imported plug-ins: a registry maps a name to ``"module:attribute"`` and imports it on first use.

The format registry (``shared.parsing.registry``), a format's option model
(``shared.parsing.spec``) and the test renderers (``shared.generate.render``) all name their
implementations this way, so that importing a registry imports no format.
"""

from __future__ import annotations

import importlib
from typing import Any


def load(target: str) -> Any:
    """The attribute a ``"module:attribute"`` target names, its module imported if it is not yet."""
    module_name, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module_name), attribute)
