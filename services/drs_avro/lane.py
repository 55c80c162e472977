"""The ``drs-avro`` lane (``src/drs.rs``, ``src/avro_reader.rs``): flat records under a schema it decodes exactly."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """DRS flat records under a schema the lane decodes exactly (``services/drs_avro/plan.py``), else none."""
    from binlake.services.drs_avro.parser import FORMAT_ID
    from binlake.services.drs_avro.plan import fields
    from binlake.services.drs_json.plan import planner
    from binlake.shared.kernel import _kernel
    from binlake.shared.kernel.plan import instant_reader

    layout = fields(ctx)
    if layout is None:
        return None
    zone = ctx.source_timezone
    # The flat reader's Source.db_type when the record has no dbType (an accepted schema has none).
    found: Lane = _kernel.DrsAvroLane(
        avro.fingerprint(), FORMAT_ID, "MYSQL", layout, planner(zone), instant_reader(zone)
    )
    return found
