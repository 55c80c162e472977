"""What binlake knows of ``debezium-json``: parser, options and native lane (``shared.parsing.spec``)."""

from __future__ import annotations

from services.debezium_json.parser import FORMAT_ID, PARSER_VERSION, parse
from shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options="services.debezium_json.options:Options",
    lane="services.debezium_json.lane:lane",
)
