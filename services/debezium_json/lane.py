"""The ``debezium-json`` lane (``src/debezium.rs``): JsonConverter change events with their schemas."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.fastlane.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """Debezium's lane reads option ``primary_key`` only: with another set (``bytes_encoding``), or
    ``primary_key`` invalid (every message a reject), the Python parser does it all."""
    from binlake.services.debezium_json.parser import FORMAT_ID, primary_key_option
    from binlake.services.debezium_json.plan import planner
    from binlake.shared.fastlane import _native
    from binlake.shared.parsing.errors import RejectError

    if any(name != "primary_key" for name in ctx.options):
        return None
    try:
        primary_key = primary_key_option(ctx)
    except RejectError:
        return None
    found: Lane = _native.DebeziumLane(avro.fingerprint(), FORMAT_ID, primary_key, planner())
    return found
