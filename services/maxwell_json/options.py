"""The ``maxwell-json`` options (``--option KEY=VALUE``, ``BINLAKE_FORMAT_OPTIONS``)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from binlake.shared.parsing.options import FormatOptions, OrderOption

ORDER: Any = Field(
    None,
    description="What `order_key` follows for the whole stream: `kafka` (the default) the input's Kafka order, "
    "`position` the binlog position Maxwell writes with output_binlog_position (a message without `position` is "
    "then a reject). Empty or unset: `kafka`. Keys of the two do not compare: changing it means rebuilding the "
    "mirrors fed so far.",
)


class Options(FormatOptions):
    order: OrderOption | None = ORDER
