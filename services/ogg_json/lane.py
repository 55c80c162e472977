"""The ``ogg-json`` lane (``src/ogg.rs``): GoldenGate operations, columns inferred from the values."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """GoldenGate's lane reads option ``db_type`` only: with another set the Python parser does it all."""
    from binlake.services.ogg_json.parser import DATABASE_IS_SCHEMA, FORMAT_ID
    from binlake.shared.kernel import _kernel
    from binlake.shared.parsing.temporal import UTC

    if any(name != "db_type" for name in ctx.options):
        return None
    option = ctx.options.get("db_type")
    # The parser's Source.db_type for every event.
    db_type = option.upper() if isinstance(option, str) and option else "ORACLE"
    zone = ctx.source_timezone
    wall_clock = None if zone is UTC else _wall_clock(zone)
    found: Lane = _kernel.OggLane(avro.fingerprint(), FORMAT_ID, db_type, db_type in DATABASE_IS_SCHEMA, wall_clock)
    return found


def _wall_clock(zone: _dt.tzinfo) -> Callable[[str], int | None]:
    """wall_clock(text) -> epoch ms | None: GoldenGate's ``current_ts`` read in ``zone`` by the parser's
    own ``time_ms`` (Python's zone rules: DST gaps and folds resolve alike)."""
    from binlake.services.ogg_json.parser import time_ms
    from binlake.shared.parsing.errors import RejectError

    def read(text: str) -> int | None:
        try:
            return time_ms({"current_ts": text}, "current_ts", zone)
        except RejectError:
            return None

    return read
