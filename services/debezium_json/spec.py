"""What binlake knows of ``debezium-json``: parser and options (``shared.parsing.spec``)."""

from __future__ import annotations

from binlake.services.debezium_json.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options="binlake.services.debezium_json.options:Options",
)
