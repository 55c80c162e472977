"""``canal-json``: Alibaba Canal flat JSON, and OceanBase OMS's "Canal" serialization.

The two differ in ways a message shows: Canal always sends its message ``id``,
renders every value as a string and binary as ISO-8859-1 text; OMS omits ``id``,
sends numbers as JSON numbers, binary as base64, and uses ``bigint`` for
integers beyond int64 (its ``int64`` is the signed 64-bit type). A message
without ``id`` is therefore read with OMS conventions; the option
``bytes_encoding`` overrides the binary rule for both.

Order key: the input's Kafka order: major = input partition, minor = input
offset, then the row index in the message. A flat message holds no log
position: ``es`` is the binlog event's time, of one-second resolution and
not monotonic across transactions (one that started earlier can commit later),
and Canal's ``id`` numbers a batch, so every flat message of a batch shares it.
Keyed by (``es``, ``id``, row), as before this release, two changes of a row in
one second tied, and row 2 of one message sorted after row 0 of a later one.
Canal writes a table's messages to Kafka in binlog order, so within one input
partition Kafka order is the source order. Keys compare only within one input
partition: Canal's ``canal.mq.partitionHash`` must keep a row's changes in one
partition (hash by table, or by table and primary key; the default sends all to
partition 0). A TRUNCATE or table-dropping DDL is ordered against a table's
rows, so such a table must be hashed whole (by table) for them to apply in place.
"""

from __future__ import annotations

from typing import Any, Final

from binlake.services.canal_json.flat import FlatProfile, order_by_input, parse_flat
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.jsondoc import decode_and_parse
from binlake.shared.parsing.result import Parsed

FORMAT_ID: Final = "canal-json"
PARSER_VERSION: Final = "1"

CANAL: Final = FlatProfile(FORMAT_ID, "mysql", "latin1", "data", order_by_input)
OMS_CANAL: Final = FlatProfile(FORMAT_ID, "oms", "base64", "data", order_by_input)


def _profile(doc: Any, ctx: ParseContext) -> FlatProfile:
    base = CANAL if isinstance(doc, dict) and "id" in doc else OMS_CANAL
    encoding = ctx.options.get("bytes_encoding")
    if encoding and encoding != base.bytes_encoding:
        return FlatProfile(FORMAT_ID, base.dialect, encoding, "data", order_by_input)
    return base


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: parse_flat(doc, ctx, _profile(doc, ctx)))
