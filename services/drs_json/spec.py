"""What binlake knows of ``drs-json`` and ``drs-json-c``: parser and options (``shared.parsing.spec``)."""

from __future__ import annotations

from binlake.services.drs_json.parser import FORMAT_ID, FORMAT_ID_C, PARSER_VERSION, parse_json, parse_json_c
from binlake.shared.parsing.spec import FormatSpec

SPEC_JSON = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse_json,
    options=None,
)

SPEC_JSON_C = FormatSpec(
    FORMAT_ID_C,
    PARSER_VERSION,
    parse_json_c,
    options=None,
)
