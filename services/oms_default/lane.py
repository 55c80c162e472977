"""The OceanBase OMS JSON lanes (``src/oms_json.rs``): ``oms-default`` and ``oms-extend-column-type``, and
``oms_lane``, the builder ``oms-dataworks`` and ``oms-shareplex`` use too."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.kernel.plan import Planner
from binlake.shared.parsing.context import ParseContext


def lane_default(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    from binlake.services.oms_default.parser import FORMAT_ID
    from binlake.services.oms_default.plan import extend_planner

    return oms_lane(FORMAT_ID, ctx, extend_planner(ctx.source_timezone))


def lane_extend_column_type(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    from binlake.services.oms_default.parser import FORMAT_ID_EXTEND
    from binlake.services.oms_default.plan import extend_planner

    return oms_lane(FORMAT_ID_EXTEND, ctx, extend_planner(ctx.source_timezone))


def oms_lane(format_id: str, ctx: ParseContext, planner: Planner) -> Lane | None:
    """The OMS JSON lanes read no option: with any set the Python parser does it all."""
    if ctx.options:
        return None
    from binlake.services.oms_default.plan import wall_clock_reader
    from binlake.shared.kernel import _kernel
    from binlake.shared.kernel.plan import instant_reader

    zone = ctx.source_timezone
    # SharePlex's wall clocks are its meta times (no column types); the others' are TIMESTAMP values.
    instant = wall_clock_reader(zone) if format_id == "oms-shareplex" else instant_reader(zone)
    found: Lane = _kernel.OmsLane(avro.fingerprint(), format_id, planner, instant)
    return found
