"""The ``drs-avro`` options: the DRS record schema (``--avro-schema``, ``BINLAKE_AVRO_SCHEMA_FILE``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from binlake.shared.parsing.options import FormatOptions


class Options(FormatOptions):
    avro_schema: dict[str, Any] | list[Any] | str | None = Field(
        None, description="The DRS Avro record schema (parsed JSON, or its text): required to read any message."
    )
    avro_record: str | None = Field(
        None, description="The record's full name when the schema holds several; unset: its top-level record."
    )
