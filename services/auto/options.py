"""``auto``'s options: any option of the formats it detects, handed to each detected format's parser."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from binlake.services.debezium_smt.options import Options as SmtOptions
from binlake.services.drs_avro.options import Options as DrsAvroOptions
from binlake.shared.parsing.options import OrderOption

ORDER: Any = Field(
    None,
    description="The `order` option of the detected maxwell-json and debezium-json messages (see theirs): `kafka` "
    "or `position` for both; empty or unset: each its own default (maxwell-json `kafka`, debezium-json "
    "`position`). The other formats have one key space and ignore it.",
)


class Options(SmtOptions, DrsAvroOptions):
    """bytes_encoding, primary_key, db_type (the JSON formats'), order (maxwell-json's and debezium-json's) and
    the DRS Avro schema fields."""

    order: OrderOption | None = ORDER
