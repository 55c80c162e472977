"""What binlake knows of ``canal-json``: parser and options (``shared.parsing.spec``)."""

from __future__ import annotations

from binlake.services.canal_json.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options="binlake.services.canal_json.options:Options",
)
