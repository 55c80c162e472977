"""The ``debezium-smt`` options (``--option KEY=VALUE``, ``BINLAKE_FORMAT_OPTIONS``)."""

from __future__ import annotations

from binlake.shared.parsing.options import BYTES_ENCODING, DB_TYPE, PRIMARY_KEY, BytesEncodingOption, FormatOptions


class Options(FormatOptions):
    primary_key: str | list[str] | None = PRIMARY_KEY
    bytes_encoding: BytesEncodingOption | None = BYTES_ENCODING
    db_type: str | None = DB_TYPE
