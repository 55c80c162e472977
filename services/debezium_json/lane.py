"""The ``debezium-json`` lane (``src/debezium.rs``): JsonConverter change events with their schemas."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """Debezium's lane reads options ``primary_key`` and ``order`` (the lane keys by the connector's log
    position, as ``order=position``, the default, does): with another set (``bytes_encoding``),
    ``order=kafka``, or either invalid (every message a reject), the Python parser does it all."""
    from binlake.services.debezium_json.parser import FORMAT_ID, primary_key_option
    from binlake.services.debezium_json.plan import planner
    from binlake.shared.kernel import _kernel
    from binlake.shared.parsing.errors import RejectError
    from binlake.shared.parsing.order import by_position

    if any(name not in ("primary_key", "order") for name in ctx.options):
        return None
    try:
        primary_key = primary_key_option(ctx)
        if not by_position(ctx, True):
            return None
    except RejectError:
        return None
    found: Lane = _kernel.DebeziumLane(avro.fingerprint(), FORMAT_ID, primary_key, planner())
    return found
