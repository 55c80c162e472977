"""What binlake knows of ``maxwell-json``: parser, options and native lane (``shared.parsing.spec``)."""

from __future__ import annotations

from services.maxwell_json.parser import FORMAT_ID, PARSER_VERSION, parse
from shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options=None,
    lane="services.maxwell_json.lane:lane",
)
