"""The debezium-smt lane's planner: a flattened row schema's conversion kinds (``src/debezium_smt.rs``).

The schema is the row struct itself, its ``__`` fields metadata; the columns are read as
``services/debezium_json/plan.py`` reads an envelope's row struct, with this parser's test of
what is a column.
"""

from __future__ import annotations

from collections.abc import Callable

from binlake.services.debezium_json import connect
from binlake.services.debezium_json.plan import ENCODING, PlanAnswer, answer, schema_of
from binlake.services.debezium_smt.parser import is_column
from binlake.shared.parsing.errors import RejectError


def plan_row(schema_raw: bytes) -> PlanAnswer:
    """plan_row(flattened row schema bytes) -> as ``plan``: debezium-smt's columns, ``__`` fields left out."""
    schema = schema_of(schema_raw)
    if schema is None:
        return None
    try:
        types = connect.row_types(connect.struct_fields(schema, "schema"), ENCODING, is_column)
    except RejectError:
        return None
    return answer(types)


def row_planner() -> Callable[[bytes], PlanAnswer]:
    return plan_row
