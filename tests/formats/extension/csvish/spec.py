"""What binlake knows of ``csvish``: its parser, and nothing native (``shared.parsing.spec``)."""

from __future__ import annotations

from binlake.shared.parsing.spec import FormatSpec
from tests.formats.extension.csvish.parser import FORMAT_ID, PARSER_VERSION, parse

SPEC = FormatSpec(FORMAT_ID, PARSER_VERSION, parse)
