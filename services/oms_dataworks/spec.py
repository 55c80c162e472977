"""What binlake knows of ``oms-dataworks``: parser and options (``shared.parsing.spec``)."""

from __future__ import annotations

from binlake.services.oms_dataworks.parser import FORMAT_ID, PARSER_VERSION, parse
from binlake.shared.parsing.spec import FormatSpec

SPEC = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse,
    options=None,
)
