"""Which lane runs a format, and the record it returns."""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Callable, Mapping
from typing import Final, Protocol

from shared.codec import avro
from shared.parsing.context import ParseContext

log = logging.getLogger("binlake.fastlane")

Taken = tuple[str, str, int | None, list[bytes]]
"""What a lane makes of one message: ("database.table", op, event time in ms or None,
[record key, single-object Avro value, key, value, ...] for its rows in order)."""


def _lane_failed() -> type[Exception]:
    try:
        from shared.fastlane._native import LaneFailed as failed
    except ImportError:  # no extension, no lane: nothing raises it
        return _NoLane
    return failed


class _NoLane(Exception):
    pass


LaneFailed: Final = _lane_failed()
"""What a lane raises when it crashed on a message (a caught Rust panic: a bug in the lane)."""


class Lane(Protocol):
    def parse(self, raw: bytes, topic: str, partition: int, offset: int) -> Taken | None:
        """What the lane makes of one message, or None: the Python parser takes the message.

        Raises ``LaneFailed`` when it crashed on it."""
        ...

    def planned(self) -> int:
        """How many type maps the lane has planned so far."""
        ...


def available() -> bool:
    """Whether the native extension was built (it is optional: no Rust toolchain, no lane)."""
    try:
        from shared.fastlane import _native  # noqa: F401
    except ImportError:
        return False
    return True


def lane_for(format_id: str, ctx: ParseContext, topic_tables: Mapping[str, str] | None = None) -> Lane | None:
    """The lane for ``format_id`` under these parse settings, or None (the Python parser does it all).

    ``topic_tables``: each topic's ``db.table`` for formats whose messages may name no table (the
    runtime's per-topic ``source_table``); other topics take ``ctx.source_table``.
    """
    if not available():
        return None
    if format_id == "debezium-smt":
        return _debezium_smt_lane(ctx, topic_tables or {})
    if format_id == "ogg-json":
        return _ogg_lane(ctx)
    if format_id == "maxwell-json":
        return _maxwell_lane(ctx)
    if format_id == "drs-avro":
        return _drs_avro_lane(ctx)
    if format_id == "debezium-json":
        return _debezium_lane(ctx)
    if format_id in ("drs-json", "drs-json-c"):
        return _drs_json_lane(format_id, ctx)
    if format_id == "kafkariver-canal":
        return _kafkariver_lane(ctx)
    if format_id in ("oms-default", "oms-extend-column-type", "oms-dataworks", "oms-shareplex"):
        return _oms_lane(format_id, ctx)
    if format_id == "ckafka-v1":
        return _ckafka_lane(ctx)
    if format_id == "oms-avro":
        return _oms_avro_lane(ctx)
    if format_id == "auto":
        from shared.fastlane.auto import AutoLane

        return AutoLane(ctx, topic_tables or {})
    if format_id != "canal-json" or not _plain_canal(ctx.options):
        return None
    from services.canal_json.parser import CANAL
    from shared.fastlane import _native
    from shared.fastlane.plan import instant_reader, planner

    zone = ctx.source_timezone
    plan = planner(CANAL.dialect, CANAL.bytes_encoding, zone)
    lane: Lane = _native.CanalLane(avro.fingerprint(), CANAL.format_id, CANAL.db_type or "", plan, instant_reader(zone))
    return lane


def _maxwell_lane(ctx: ParseContext) -> Lane | None:
    """Maxwell's lane reads no option: with any option set the Python parser does it all."""
    if ctx.options:
        return None
    from services.maxwell_json.parser import FORMAT_ID
    from shared.fastlane import _native

    # The Python parser's Source.db_type for every Maxwell event.
    lane: Lane = _native.MaxwellLane(avro.fingerprint(), FORMAT_ID, "MYSQL")
    return lane


def _drs_avro_lane(ctx: ParseContext) -> Lane | None:
    """DRS flat records under a schema the lane decodes exactly (``plan_drs.fields``), else none."""
    from services.drs_avro.parser import FORMAT_ID
    from shared.fastlane import _native
    from shared.fastlane.plan import instant_reader
    from shared.fastlane.plan_drs import fields, planner

    layout = fields(ctx)
    if layout is None:
        return None
    zone = ctx.source_timezone
    # The flat reader's Source.db_type when the record has no dbType (an accepted schema has none).
    lane: Lane = _native.DrsAvroLane(
        avro.fingerprint(), FORMAT_ID, "MYSQL", layout, planner(zone), instant_reader(zone)
    )
    return lane


def _drs_json_lane(format_id: str, ctx: ParseContext) -> Lane | None:
    """DRS JSON / JSON-C: the parser reads no option, so with any option set the lane stays off
    (it could not follow one the parser came to read)."""
    if ctx.options:
        return None
    from services.drs_json.parser import FORMAT_ID
    from shared.fastlane import _native
    from shared.fastlane.plan import instant_reader
    from shared.fastlane.plan_drs import planner

    zone = ctx.source_timezone
    # The parser's FlatProfile: db_type MYSQL (the lane takes MySQL sources only), and where a
    # DELETE's row is: "old" for DRS JSON, "data" for JSON-C.
    delete_row_in = "old" if format_id == FORMAT_ID else "data"
    lane: Lane = _native.DrsJsonLane(
        avro.fingerprint(), format_id, "MYSQL", delete_row_in, planner(zone), instant_reader(zone)
    )
    return lane


def _debezium_lane(ctx: ParseContext) -> Lane | None:
    """Debezium's lane reads option ``primary_key`` only: with another set (``bytes_encoding``), or
    ``primary_key`` invalid (every message a reject), the Python parser does it all."""
    from services.debezium_json.parser import FORMAT_ID, primary_key_option
    from shared.fastlane import _native
    from shared.fastlane.plan_debezium import planner
    from shared.parsing.errors import RejectError

    if any(name != "primary_key" for name in ctx.options):
        return None
    try:
        primary_key = primary_key_option(ctx)
    except RejectError:
        return None
    lane: Lane = _native.DebeziumLane(avro.fingerprint(), FORMAT_ID, primary_key, planner())
    return lane


def _debezium_smt_lane(ctx: ParseContext, topic_tables: Mapping[str, str]) -> Lane | None:
    """The SMT lane reads options ``primary_key`` and ``db_type``, and bytes as base64 (the default):
    with another option set (``bytes_encoding=hex`` for OMS), or ``primary_key`` invalid (every
    message a reject), the Python parser does it all."""
    from services.debezium_json.parser import primary_key_option
    from services.debezium_smt.parser import FORMAT_ID
    from shared.fastlane import _native
    from shared.fastlane.plan_debezium import row_planner
    from shared.parsing.errors import RejectError

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
    lane: Lane = _native.DebeziumSmtLane(
        avro.fingerprint(), FORMAT_ID, primary_key, db_type, dict(topic_tables), ctx.source_table, row_planner()
    )
    return lane


def _ogg_lane(ctx: ParseContext) -> Lane | None:
    """GoldenGate's lane reads option ``db_type`` only: with another set the Python parser does it all."""
    from services.ogg_json.parser import _DATABASE_IS_SCHEMA, FORMAT_ID
    from shared.fastlane import _native
    from shared.parsing.temporal import UTC

    if any(name != "db_type" for name in ctx.options):
        return None
    option = ctx.options.get("db_type")
    # The parser's Source.db_type for every event.
    db_type = option.upper() if isinstance(option, str) and option else "ORACLE"
    zone = ctx.source_timezone
    wall_clock = None if zone is UTC else _wall_clock(zone)
    lane: Lane = _native.OggLane(avro.fingerprint(), FORMAT_ID, db_type, db_type in _DATABASE_IS_SCHEMA, wall_clock)
    return lane


def _wall_clock(zone: _dt.tzinfo) -> Callable[[str], int | None]:
    """wall_clock(text) -> epoch ms | None: GoldenGate's ``current_ts`` read in ``zone`` by the parser's
    own ``_time_ms`` (Python's zone rules: DST gaps and folds resolve alike)."""
    from services.ogg_json.parser import _time_ms
    from shared.parsing.errors import RejectError

    def read(text: str) -> int | None:
        try:
            return _time_ms({"current_ts": text}, "current_ts", zone)
        except RejectError:
            return None

    return read


def _kafkariver_lane(ctx: ParseContext) -> Lane | None:
    """KafkaRiverCanal's lane: its columns' ``t`` texts read by the Canal lane's planner (MySQL rules,
    ISO-8859-1 binary), so with a ``bytes_encoding`` other than Canal's own there is no lane."""
    if not _plain_canal(ctx.options):
        return None
    from services.kafkariver_canal.parser import FORMAT_ID
    from shared.fastlane import _native
    from shared.fastlane.plan import instant_reader, planner

    zone = ctx.source_timezone
    # The parser's Source.db_type for every KafkaRiverCanal event.
    lane: Lane = _native.KafkaRiverLane(
        avro.fingerprint(), FORMAT_ID, "MYSQL", planner("mysql", "latin1", zone), instant_reader(zone)
    )
    return lane


def _ckafka_lane(ctx: ParseContext) -> Lane | None:
    """CKafka format one's lane. Its parser reads no option, so neither does the lane; ``TIME`` is
    read in Rust in UTC and by the parser's own ``compact_local_to_ms`` in any other zone."""
    from services.ckafka_v1.parser import FORMAT_ID
    from shared.fastlane import _native
    from shared.parsing.temporal import UTC, compact_local_to_ms

    zone = ctx.source_timezone

    def time_ms(text: str) -> int | None:
        try:
            return compact_local_to_ms(text, zone)
        except (ValueError, OverflowError):
            return None

    # The parser's Source.db_type for every CKafka DML event.
    lane: Lane = _native.CKafkaLane(avro.fingerprint(), FORMAT_ID, "MYSQL", None if zone is UTC else time_ms)
    return lane


def _oms_lane(format_id: str, ctx: ParseContext) -> Lane | None:
    """The OMS JSON lanes read no option: with any set the Python parser does it all."""
    if ctx.options:
        return None
    from shared.fastlane import _native
    from shared.fastlane.plan import instant_reader
    from shared.fastlane.plan_oms import planner, wall_clock_reader

    zone = ctx.source_timezone
    # SharePlex's wall clocks are its meta times (no column types); the others' are TIMESTAMP values.
    instant = wall_clock_reader(zone) if format_id == "oms-shareplex" else instant_reader(zone)
    lane: Lane = _native.OmsLane(avro.fingerprint(), format_id, planner(format_id, zone), instant)
    return lane


def _oms_avro_lane(ctx: ParseContext) -> Lane | None:
    """OMS Avro's lane reads no option (nor does its parser today): with any option set the Python
    parser does it all, so an option it learns later cannot be missed by the lane."""
    if ctx.options:
        return None
    from services.oms_avro import values
    from services.oms_avro.parser import FORMAT_ID
    from shared.fastlane import _native
    from shared.fastlane.plan import instant_reader
    from shared.parsing.temporal import UTC

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
    lane: Lane = _native.OmsAvroLane(avro.fingerprint(), FORMAT_ID, codes, instant)
    return lane


def _plain_canal(options: Mapping[str, object]) -> bool:
    """Canal's own conventions: no option, or the binary encoding Canal uses anyway."""
    return all(key == "bytes_encoding" and value == "latin1" for key, value in options.items())
