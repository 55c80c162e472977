"""The ``kafkariver-canal`` lane (``src/kafkariver.rs``): typed columns, read by the Canal planner."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.services.canal_json.lane import plain_canal
from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """KafkaRiverCanal's lane: its columns' ``t`` texts read by the Canal lane's planner (MySQL rules,
    ISO-8859-1 binary), so with a ``bytes_encoding`` other than Canal's own there is no lane."""
    if not plain_canal(ctx.options):
        return None
    from binlake.services.kafkariver_canal.parser import FORMAT_ID
    from binlake.shared.kernel import _kernel
    from binlake.shared.kernel.plan import instant_reader, planner

    zone = ctx.source_timezone
    # The parser's Source.db_type for every KafkaRiverCanal event.
    found: Lane = _kernel.KafkaRiverLane(
        avro.fingerprint(), FORMAT_ID, "MYSQL", planner("mysql", "latin1", zone), instant_reader(zone)
    )
    return found
