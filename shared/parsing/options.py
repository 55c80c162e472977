"""The format options' pydantic base and the option fields several formats share.

Options arrive as strings (``--option KEY=VALUE``, ``BINLAKE_FORMAT_OPTIONS``) or, for
``avro_schema``, as the parsed JSON schema. A format's ``options.py`` declares the ones it
reads; anything else is a configuration error naming the known ones.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

BytesEncodingOption = Literal["", "latin1", "base64", "hex", "list"]
OrderOption = Literal["", "kafka", "position"]
"""Option ``order`` (maxwell-json, debezium-json, auto): which key space ``order_key`` uses for the whole
stream, ``kafka`` (the input's partition and offset) or ``position`` (the vendor's log position); empty or
unset: the format's default. Read per message by ``shared.parsing.order.by_position``."""


class FormatOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


BYTES_ENCODING: Any = Field(
    None,
    description="How binary column values are written in the messages: latin1 (ISO-8859-1 text), base64, hex or "
    "list (a JSON list of byte values); empty or unset: the format's own convention.",
)
PRIMARY_KEY: Any = Field(
    None, description="Key column names (comma-separated) for messages that name none; unset: the message's own."
)
DB_TYPE: Any = Field(None, description="The source database type (MYSQL, ORACLE...) for messages that name none.")
