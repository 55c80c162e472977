"""The ``oms-dataworks`` lane's planner: ``schema.column`` type words read by the parser's ``column_type``."""

from __future__ import annotations

import datetime as _dt

from binlake.services.oms_dataworks.parser import column_type
from binlake.services.oms_default.plan import answer
from binlake.shared.kernel.plan import PlanAnswer, Planner
from binlake.shared.parsing.rows import RowTypes


def dataworks_planner(zone: _dt.tzinfo) -> Planner:
    """plan(names, type words or None) for ``schema.column`` (``_row_types``: every listed column declared)."""

    def plan(names: list[str], texts: list[str | None]) -> PlanAnswer:
        types = RowTypes((name, column_type(text, zone)) for name, text in zip(names, texts, strict=True))
        return answer(names, texts, types, zone)

    return plan
