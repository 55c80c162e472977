"""The ``drs-json`` and ``drs-json-c`` lanes (``src/drs_json.rs``): MySQL row messages."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane_json(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    from binlake.services.drs_json.parser import FORMAT_ID

    return _lane(FORMAT_ID, ctx)


def lane_json_c(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    from binlake.services.drs_json.parser import FORMAT_ID_C

    return _lane(FORMAT_ID_C, ctx)


def _lane(format_id: str, ctx: ParseContext) -> Lane | None:
    """DRS JSON / JSON-C: the parser reads no option, so with any option set the lane stays off
    (it could not follow one the parser came to read)."""
    if ctx.options:
        return None
    from binlake.services.drs_json.parser import FORMAT_ID
    from binlake.services.drs_json.plan import planner
    from binlake.shared.kernel import _kernel
    from binlake.shared.kernel.plan import instant_reader

    zone = ctx.source_timezone
    # The parser's FlatProfile: db_type MYSQL (the lane takes MySQL sources only), and where a
    # DELETE's row is: "old" for DRS JSON, "data" for JSON-C.
    delete_row_in = "old" if format_id == FORMAT_ID else "data"
    found: Lane = _kernel.DrsJsonLane(
        avro.fingerprint(), format_id, "MYSQL", delete_row_in, planner(zone), instant_reader(zone)
    )
    return found
