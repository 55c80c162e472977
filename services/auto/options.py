"""``auto``'s options: any option of the formats it detects, handed to each detected format's parser."""

from __future__ import annotations

from binlake.services.debezium_smt.options import Options as SmtOptions
from binlake.services.drs_avro.options import Options as DrsAvroOptions


class Options(SmtOptions, DrsAvroOptions):
    """bytes_encoding, primary_key, db_type (the JSON formats') and the DRS Avro schema fields."""
