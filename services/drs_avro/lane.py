"""The ``drs-avro`` lane (``src/drs.rs``, ``src/avro_reader.rs``): flat records under a schema it decodes exactly."""

from __future__ import annotations

from collections.abc import Mapping

from shared.codec import avro
from shared.fastlane.lanes import Lane
from shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """DRS flat records under a schema the lane decodes exactly (``services/drs_avro/plan.py``), else none."""
    from services.drs_avro.parser import FORMAT_ID
    from services.drs_avro.plan import fields
    from services.drs_json.plan import planner
    from shared.fastlane import _native
    from shared.fastlane.plan import instant_reader

    layout = fields(ctx)
    if layout is None:
        return None
    zone = ctx.source_timezone
    # The flat reader's Source.db_type when the record has no dbType (an accepted schema has none).
    found: Lane = _native.DrsAvroLane(
        avro.fingerprint(), FORMAT_ID, "MYSQL", layout, planner(zone), instant_reader(zone)
    )
    return found
