"""The ``ckafka-v1`` lane (``src/ckafka.rs``): format-one DML of strings, columns inferred."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """CKafka format one's lane. Its parser reads no option, so neither does the lane; ``TIME`` is
    read in Rust in UTC and by the parser's own ``compact_local_to_ms`` in any other zone."""
    from binlake.services.ckafka_v1.parser import FORMAT_ID
    from binlake.shared.kernel import _kernel
    from binlake.shared.parsing.temporal import UTC, compact_local_to_ms

    zone = ctx.source_timezone

    def time_ms(text: str) -> int | None:
        try:
            return compact_local_to_ms(text, zone)
        except (ValueError, OverflowError):
            return None

    # The parser's Source.db_type for every CKafka DML event.
    found: Lane = _kernel.CKafkaLane(avro.fingerprint(), FORMAT_ID, "MYSQL", None if zone is UTC else time_ms)
    return found
