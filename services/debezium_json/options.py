"""The ``debezium-json`` options (``--option KEY=VALUE``, ``BINLAKE_FORMAT_OPTIONS``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from binlake.shared.parsing.options import BYTES_ENCODING, PRIMARY_KEY, BytesEncodingOption, FormatOptions, OrderOption

ORDER: Any = Field(
    None,
    description="What `order_key` follows for the whole stream: `position` (the default) the log position of "
    "the stream's connector (binlog for `mysql` and `mariadb`, LSN for `postgresql`; a change without it is a "
    "reject; other connectors and OMS: the input's Kafka order), `kafka` the input's Kafka order for every "
    "connector. Empty or unset: `position`. Keys of the two do not compare: changing it means rebuilding the "
    "mirrors fed so far.",
)


class Options(FormatOptions):
    primary_key: str | list[str] | None = PRIMARY_KEY
    bytes_encoding: BytesEncodingOption | None = BYTES_ENCODING
    order: OrderOption | None = ORDER
