"""What binlake knows of ``debezium-smt``: parser, options and native lane (``shared.parsing.spec``)."""

from __future__ import annotations

from services.debezium_smt.parser import FORMAT_ID, PARSER_VERSION, parse
from shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options="services.debezium_smt.options:Options",
    lane="services.debezium_smt.lane:lane",
)
