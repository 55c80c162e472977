"""The ``oms-shareplex`` lane (``src/oms_json.rs``, ``src/oms_shareplex.rs``): untyped columns, so no planner."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.services.oms_default.lane import oms_lane
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    from binlake.services.oms_default.plan import extend_planner
    from binlake.services.oms_shareplex.parser import FORMAT_ID

    # SharePlex declares no column types: its lane never asks the planner it is given.
    return oms_lane(FORMAT_ID, ctx, extend_planner(ctx.source_timezone))
