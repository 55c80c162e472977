"""The ``maxwell-json`` lane (``src/maxwell.rs``): row messages, columns inferred from the values."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """Maxwell's lane reads option ``order`` (the key space, as the parser reads it) only: with another
    option set, or ``order`` invalid (every message a reject), the Python parser does it all."""
    from binlake.services.maxwell_json.parser import FORMAT_ID
    from binlake.shared.kernel import _kernel
    from binlake.shared.parsing.errors import RejectError
    from binlake.shared.parsing.order import by_position

    if any(name != "order" for name in ctx.options):
        return None
    try:
        position = by_position(ctx, False)
    except RejectError:
        return None
    # The Python parser's Source.db_type for every Maxwell event.
    found: Lane = _kernel.MaxwellLane(avro.fingerprint(), FORMAT_ID, "MYSQL", position)
    return found
