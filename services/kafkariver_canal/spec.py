"""What binlake knows of ``kafkariver-canal``: parser and options (``shared.parsing.spec``)."""

from __future__ import annotations

from binlake.services.kafkariver_canal.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options="binlake.services.kafkariver_canal.options:Options",
)
