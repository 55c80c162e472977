"""The ``kafkariver-canal`` options (``--option KEY=VALUE``, ``BINLAKE_FORMAT_OPTIONS``)."""

from __future__ import annotations

from binlake.shared.parsing.options import BYTES_ENCODING, BytesEncodingOption, FormatOptions


class Options(FormatOptions):
    bytes_encoding: BytesEncodingOption | None = BYTES_ENCODING
