"""What binlake knows of ``oms-default`` and ``oms-extend-column-type``: parsers and options."""

from __future__ import annotations

from binlake.services.oms_default.parser import (
    FORMAT_ID,
    FORMAT_ID_EXTEND,
    PARSER_VERSION,
    parse_default,
    parse_extend_column_type,
)
from binlake.shared.parsing.spec import FormatSpec

SPEC_DEFAULT = FormatSpec(
    FORMAT_ID,
    PARSER_VERSION,
    parse_default,
    options=None,
)

SPEC_EXTEND_COLUMN_TYPE = FormatSpec(
    FORMAT_ID_EXTEND,
    PARSER_VERSION,
    parse_extend_column_type,
    options=None,
)
