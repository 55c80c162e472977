"""The ``debezium-smt`` lane (``src/debezium_smt.rs``): ExtractNewRecordState rows with their schema."""

from __future__ import annotations

from collections.abc import Mapping

from binlake.shared.codec import avro
from binlake.shared.kernel.lanes import Lane
from binlake.shared.parsing.context import ParseContext


def lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """The SMT lane reads options ``primary_key`` and ``db_type``, and bytes as base64 (the default):
    with another option set (``bytes_encoding=hex`` for OMS), or ``primary_key`` invalid (every
    message a reject), the Python parser does it all."""
    from binlake.services.debezium_json.parser import primary_key_option
    from binlake.services.debezium_smt.parser import FORMAT_ID
    from binlake.services.debezium_smt.plan import row_planner
    from binlake.shared.kernel import _kernel
    from binlake.shared.parsing.errors import RejectError

    if any(name not in ("primary_key", "db_type", "bytes_encoding") for name in ctx.options):
        return None
    if ctx.options.get("bytes_encoding") not in (None, "", "base64"):
        return None
    try:
        primary_key = primary_key_option(ctx)
    except RejectError:
        return None
    option = ctx.options.get("db_type")
    # The parser's db_type when a row names no __source_connector.
    db_type = option.upper() if isinstance(option, str) and option else None
    found: Lane = _kernel.DebeziumSmtLane(
        avro.fingerprint(), FORMAT_ID, primary_key, db_type, dict(topic_tables), ctx.source_table, row_planner()
    )
    return found
