"""The ``canal-json`` lane (``src/canal.rs``): Canal's own profile, typed by the shared SQL planner."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """Canal's conventions only (no option, or the binary encoding Canal uses anyway); OMS's Canal
    serialization (no ``id``) is declined message by message."""
    if not plain_canal(ctx.options):
        return None
    from binlake.services.canal_json.parser import CANAL
    from binlake.shared.kernel import _kernel
    from binlake.shared.kernel.plan import instant_reader, planner

    zone = ctx.source_timezone
    plan = planner(CANAL.dialect, CANAL.bytes_encoding, zone)
    db_type = CANAL.db_type or ""
    found: Lane = _kernel.CanalLane(avro.fingerprint(), CANAL.format_id, db_type, plan, instant_reader(zone))
    return found


def plain_canal(options: Mapping[str, object]) -> bool:
    """Canal's own conventions: no option, or the binary encoding Canal uses anyway."""
    return all(key == "bytes_encoding" and value == "latin1" for key, value in options.items())
