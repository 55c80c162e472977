"""The ``oms-dataworks`` lane (``src/oms_json.rs``, ``src/oms_dataworks.rs``): typed by ``schema.column``."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.services.oms_default.lane import oms_lane
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    from binlake.services.oms_dataworks.parser import FORMAT_ID
    from binlake.services.oms_dataworks.plan import dataworks_planner

    return oms_lane(FORMAT_ID, ctx, dataworks_planner(ctx.source_timezone))
