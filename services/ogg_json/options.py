"""The ``ogg-json`` options (``--option KEY=VALUE``, ``BINLAKE_FORMAT_OPTIONS``)."""

from __future__ import annotations

from binlake.shared.parsing.options import DB_TYPE, FormatOptions


class Options(FormatOptions):
    db_type: str | None = DB_TYPE
