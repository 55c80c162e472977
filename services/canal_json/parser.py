"""``canal-json``: Alibaba Canal flat JSON, and OceanBase OMS's "Canal" serialization.

The two differ in ways a message shows: Canal always sends its message ``id``,
renders every value as a string and binary as ISO-8859-1 text; OMS omits ``id``,
sends numbers as JSON numbers, binary as base64, and uses ``bigint`` for
integers beyond int64 (its ``int64`` is the signed 64-bit type). A message
without ``id`` is therefore read with OMS conventions; the option
``bytes_encoding`` overrides the binary rule for both.

Order key: major = ``es`` (ms), minor = Canal ``id`` (0 when absent), row index.
"""

from __future__ import annotations

from typing import Any, Final

from services.canal_json.flat import FlatProfile, order_by_es_then_id, parse_flat
from shared.parsing.context import ParseContext
from shared.parsing.jsondoc import decode_and_parse
from shared.parsing.result import Parsed

FORMAT_ID: Final = "canal-json"
PARSER_VERSION: Final = "1"

CANAL: Final = FlatProfile(FORMAT_ID, "mysql", "latin1", "data", order_by_es_then_id)
OMS_CANAL: Final = FlatProfile(FORMAT_ID, "oms", "base64", "data", order_by_es_then_id)


def _profile(doc: Any, ctx: ParseContext) -> FlatProfile:
    base = CANAL if isinstance(doc, dict) and "id" in doc else OMS_CANAL
    encoding = ctx.options.get("bytes_encoding")
    if encoding and encoding != base.bytes_encoding:
        return FlatProfile(FORMAT_ID, base.dialect, encoding, "data", order_by_es_then_id)
    return base


def parse(raw: bytes, ctx: ParseContext) -> Parsed:
    return decode_and_parse(raw, lambda doc: parse_flat(doc, ctx, _profile(doc, ctx)))
