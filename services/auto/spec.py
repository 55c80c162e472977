"""What binlake knows of ``auto``: parser, options and native lane (``shared.parsing.spec``)."""

from __future__ import annotations

from services.auto.parser import FORMAT_ID, PARSER_VERSION, parse
from shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options="services.auto.options:Options",
    lane="services.auto.lane:lane",
)
