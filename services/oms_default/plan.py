"""The OceanBase OMS JSON lanes' planners: each declared column's conversion kind, read with the parsers' own types.

``oms-extend-column-type``'s planner is here with the common reading; ``oms-dataworks``'s is in
``services/oms_dataworks/plan.py``.

OMS names column types with its own words (``INT64``, ``BIGINT`` beyond 64
bits, ``BLOB`` in base64, ``TIMESTAMP`` as epoch-seconds text), read with the
``oms`` dialect of ``sql_type``. The parsers wrap some converters for OMS's
renderings (a DATETIME's trailing zone id, invalid times kept verbatim), which
change nothing for the strict value forms the lanes take, so a column's kind
comes from the plain ``oms`` type; its Avro descriptors come from the very
``RowTypes`` the parser builds. Kinds are ``plan.py``'s, plus three OMS ones
(``Col::from_code`` in ``src/oms_json.rs``).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Final

from binlake.shared.kernel._kernel import encode_columns
from binlake.shared.kernel.plan import PlanAnswer, Planner, kind
from binlake.shared.parsing import sqltypes
from binlake.shared.parsing.rows import RowTypes
from binlake.shared.parsing.sqltypes import SqlType
from binlake.shared.parsing.temporal import UTC, local_text_to_ms
from binlake.shared.parsing.validate import column_beyond_int

INFERRED: Final = 101
"""A type word without a converter of its own (``sqltypes.infer``): the value is read untyped."""
JSON_TEXT: Final = 102
"""JSON: a string, or a nested value rendered as compact JSON text."""
BYTES_BASE64: Final = 103

_ENCODING: Final = "base64"


def oms_kind(text: str | None, zone: _dt.tzinfo) -> int:
    """The lane's conversion for one OMS type word (None: declared without a type)."""
    t = sqltypes.sql_type(text, "oms", _ENCODING, zone)
    if t.convert is sqltypes.infer:
        return INFERRED
    if t.convert is sqltypes.conversion("json_text"):
        return JSON_TEXT
    if t.logical == "bytes":
        return BYTES_BASE64
    return kind(t, _ENCODING, zone)


def answer(names: list[str], texts: list[str | None], types: RowTypes, zone: _dt.tzinfo) -> PlanAnswer:
    if list(types.types) != names:
        return None  # repeated names: not the list the lane sent
    if column_beyond_int(types.columns) is not None:
        return None  # the parser rejects it (check_event)
    return names, [oms_kind(text, zone) for text in texts], encode_columns(types.columns)


def extend_planner(zone: _dt.tzinfo) -> Planner:
    """plan(names, type words) for ``__light_type`` columns (``types.row_types``, not in Oracle mode)."""
    from binlake.services.oms_default.types import light_sql_type

    def plan(names: list[str], texts: list[str | None]) -> PlanAnswer:
        if any(text is None for text in texts):
            return None
        declared: list[tuple[str, SqlType]] = [
            (name, light_sql_type(text, zone, False)) for name, text in zip(names, texts, strict=True) if text
        ]
        return answer(names, texts, RowTypes(declared), zone)

    return plan


def wall_clock_reader(zone: _dt.tzinfo) -> Callable[[str], int | None] | None:
    """ms(text) -> epoch ms of a SharePlex meta time in ``zone`` (None: not one); None in UTC (read in Rust).

    Exactly the parser's reading (``local_text_to_ms``), so DST gaps and folds resolve the
    same way; the lane calls it only for texts of the strict ``YYYY-MM-DD[ T]HH:MM:SS[.f]`` form.
    """
    if zone is UTC:
        return None

    def ms(text: str) -> int | None:
        try:
            return local_text_to_ms(text, zone)
        except ValueError:
            return None

    return ms
