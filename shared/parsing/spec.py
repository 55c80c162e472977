"""``FormatSpec``: everything binlake knows of one vendor format, exported by its ``services/<format>/spec.py``.

A format's home is its folder under ``services/``: the parser (``parser.py``, the
format, in Python) and its options (``options.py``, a pydantic model checked when a
codec is built, so that a bad option is a configuration error at start-up rather than
a reject per message). The spec names the options as a ``module:attribute`` string,
imported only when used: ``binlake normalize`` with no option never imports pydantic.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from binlake.shared.errors import ConfigError
from binlake.shared.lazy import load
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Parsed

ParseFn = Callable[[bytes, ParseContext], Parsed]


@dataclass(frozen=True, slots=True)
class FormatSpec:
    format_id: str
    version: str
    """The parser's version, named by dead letters (``binlake-parser-version``)."""
    parse: ParseFn
    """The pure parser: bytes + context -> ``Parsed``, raising ``RejectError`` for anything else."""
    options: str | None = None
    """``module:Model`` of the format's options (a ``shared.parsing.options.FormatOptions``); None: none."""

    def check_options(self, options: Mapping[str, Any]) -> None:
        """Raise ``ConfigError`` for an option this format does not know or a value it cannot take."""
        if not options:
            return
        if self.options is None:
            raise ConfigError(
                f"format {self.format_id} takes no options, got {', '.join(sorted(options))}: remove them"
            )
        from pydantic import ValidationError

        model = load(self.options)
        try:
            model.model_validate(dict(options))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(part) for part in error['loc']) or 'options'}: "
                + ("not an option of this format" if error["type"] == "extra_forbidden" else error["msg"])
                for error in exc.errors()
            )
            known = ", ".join(sorted(model.model_fields))
            raise ConfigError(f"format {self.format_id}: bad option ({problems}); its options: {known}") from None

    def option_docs(self) -> dict[str, str]:
        """Each option's name and description (empty: the format reads none)."""
        if self.options is None:
            return {}
        model = load(self.options)
        return {name: field.description or "" for name, field in model.model_fields.items()}
