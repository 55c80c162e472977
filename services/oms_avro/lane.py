"""The ``oms-avro`` lane (``src/oms_avro.rs``): DTS ``Record`` row changes, typed by their MySQL type codes."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """OMS Avro's lane reads no option (nor does its parser today): with any option set the Python
    parser does it all, so an option it learns later cannot be missed by the lane."""
    if ctx.options:
        return None
    from binlake.services.oms_avro import values
    from binlake.services.oms_avro.parser import FORMAT_ID
    from binlake.shared.kernel import _kernel
    from binlake.shared.kernel.plan import instant_reader
    from binlake.shared.parsing.temporal import UTC

    families = [
        ({values.YEAR_CODE}, "year"),
        (values.DATE_CODES, "date"),
        (values.TIME_CODES, "time"),
        (values.TIMESTAMP_CODES, "timestamp"),
        (values.STRING_CODES, "string"),
        (values.BLOB_CODES, "blob"),
    ]
    codes = [
        (code, logical, next((name for members, name in families if code in members), "other"))
        for code, (_, logical) in values.TYPE_CODES.items()
    ]
    zone = ctx.source_timezone
    # In UTC a TIMESTAMP's wall clock is its instant: the lane needs no zone rules.
    instant = None if zone is UTC else instant_reader(zone)
    found: Lane = _kernel.OmsAvroLane(avro.fingerprint(), FORMAT_ID, codes, instant)
    return found
