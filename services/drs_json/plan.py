"""The DRS lanes' column planner (``drs-json``, ``drs-json-c`` and ``drs-avro``'s flat records): MySQL
type texts without sizes, binary values as byte lists."""

from __future__ import annotations

import datetime as _dt
from typing import Final

from binlake.shared.kernel._kernel import encode_columns
from binlake.shared.kernel.plan import PlanAnswer, Planner, kind
from binlake.shared.parsing.rows import RowTypes
from binlake.shared.parsing.validate import column_beyond_int

BYTES_LIST: Final = 100
"""A binary column: Avro bytes as the column's bytes (``BYTES_LIST_CODE`` in ``src/drs.rs``)."""


def planner(zone: _dt.tzinfo) -> Planner:
    """plan(names, type texts) like ``plan.planner`` for DRS's conventions (MySQL types, byte lists)."""

    def plan(names: list[str], texts: list[str | None]) -> PlanAnswer:
        types = RowTypes.from_texts(zip(names, texts, strict=True), "drs", "list", zone)
        if column_beyond_int(types.columns) is not None:
            return None  # the parser rejects it (check_event)
        kinds = [BYTES_LIST if t.logical == "bytes" else kind(t, "list", zone) for t in types.types.values()]
        return list(types.types), kinds, encode_columns(types.columns)

    return plan
