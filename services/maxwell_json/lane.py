"""The ``maxwell-json`` lane (``src/maxwell.rs``): row messages, columns inferred from the values."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.fastlane.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """Maxwell's lane reads no option: with any option set the Python parser does it all."""
    if ctx.options:
        return None
    from binlake.services.maxwell_json.parser import FORMAT_ID
    from binlake.shared.fastlane import _native

    # The Python parser's Source.db_type for every Maxwell event.
    found: Lane = _native.MaxwellLane(avro.fingerprint(), FORMAT_ID, "MYSQL")
    return found
