"""Round trips of the Canal-family renderers: a generated workload, rendered, parsed back, compared."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from typing import Final
from zoneinfo import ZoneInfo

import fastavro
import orjson
import pytest

from binlake.shared.event.model import ChangeEvent
from binlake.shared.generate import render
from binlake.shared.generate.compare import check_event
from binlake.shared.generate.render import RenderContext
from binlake.shared.generate.render.canal_family import DRS_FLAT_SCHEMA, java_byte_list, java_double, render_drs_json
from binlake.shared.generate.workload import COLUMNS, Change, Workload
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.sqltypes import sql_type

UTC: Final = dt.UTC
SHANGHAI: Final = ZoneInfo("Asia/Shanghai")
SEEDS: Final = (1, 7, 2024)
CHANGES: Final = 400
EXACT: Final = ("canal-json", "ckafka-v1", "drs-json", "drs-json-c", "drs-avro", "maxwell-json")
"""Formats whose every change must come back exactly."""
ALL: Final = (*EXACT, "kafkariver-canal", "ogg-json")


def _round_trip(fmt: str, seed: int, zone: dt.tzinfo) -> list[tuple[Change, ChangeEvent]]:
    """Render every change of a workload, parse it back: one event per change."""
    changes = list(Workload(seed=seed, tables=3).run(CHANGES))
    options = render.parse_options(fmt)
    ctx = ParseContext(
        topic=fmt,
        source_table=options.get("source_table"),
        source_timezone=zone,
        options=options.get("options", {}),
    )
    renderer = render.get(fmt)
    parser = registry.get(fmt)
    pairs: list[tuple[Change, ChangeEvent]] = []
    for offset, change in enumerate(changes):
        raw = renderer(change, RenderContext(zone=zone))
        outcome = parser(raw, ctx.at(fmt, 0, offset))
        assert isinstance(outcome, Parsed), f"{fmt} change {change.sequence} rejected: {outcome}"
        assert len(outcome.events) == 1, f"{fmt} change {change.sequence}: {len(outcome.events)} events"
        pairs.append((change, outcome.events[0]))
    return pairs


def _problems(fmt: str, change: Change, event: ChangeEvent, zone: dt.tzinfo, *, strict: bool = False) -> list[str]:
    """check_event with the format's comparison flags (``strict``: with none)."""
    flags = render.CompareFlags() if strict else render.flags(fmt)
    return check_event(
        change,
        event,
        zone=zone,
        partial_before=flags.partial_before,
        partial_after=flags.partial_after,
        upsert=flags.upsert,
        old_null_as_empty=flags.old_null_as_empty,
    )


def _assert_table_order(pairs: list[tuple[Change, ChangeEvent]]) -> None:
    by_table: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for change, event in pairs:
        by_table[change.table].append((event.order_key, change.sequence))
    assert len(by_table) == 3
    for table, keyed in by_table.items():
        in_key_order = [sequence for _, sequence in sorted(keyed)]
        assert in_key_order == sorted(in_key_order), f"table {table}: order_key does not follow the sequence"
        assert len({key for key, _ in keyed}) == len(keyed), f"table {table}: duplicate order keys"


# ------------------------------------------------------------- exact formats


@pytest.mark.unit
@pytest.mark.parametrize("zone", [UTC, SHANGHAI], ids=["UTC", "Asia-Shanghai"])
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("fmt", EXACT)
def test_round_trip_exact(fmt: str, seed: int, zone: dt.tzinfo) -> None:
    pairs = _round_trip(fmt, seed, zone)
    failures = [
        f"#{change.sequence} {change.op}: {problems}"
        for change, event in pairs
        if (problems := _problems(fmt, change, event, zone))
    ]
    assert failures == []
    _assert_table_order(pairs)


@pytest.mark.unit
@pytest.mark.parametrize("fmt", ["canal-json", "ckafka-v1", "drs-json-c", "kafkariver-canal"])
def test_wall_clock_formats_depend_on_the_source_zone(fmt: str) -> None:
    """Rendered in Asia/Shanghai, read (and checked) as UTC: TIMESTAMPs come back 8 hours off."""
    changes = list(Workload(seed=1, tables=3).run(60))
    renderer = render.get(fmt)
    parser = registry.get(fmt)
    wrong = 0
    for change in changes:
        outcome = parser(renderer(change, RenderContext(zone=SHANGHAI)), ParseContext(source_timezone=UTC))
        assert isinstance(outcome, Parsed)
        problems = _problems(fmt, change, outcome.events[0], UTC)
        wrong += any(p.startswith(("after.updated_at", "before.updated_at")) for p in problems)
    assert wrong > 0


# ----------------------------------------------------------- kafkariver-canal


def _kafkariver_ambiguity(change: Change) -> set[str]:
    """The problems KafkaRiverCanal's format forces: an old NULL is written as ``origin_val: ""``.

    For a column whose type cannot read ``""`` the parser leaves the old value unknown
    (``before lacks``); for text, JSON and binary columns ``""`` reads as an empty value.
    """
    if change.op != "UPDATE":
        return set()
    assert change.before is not None and change.after is not None
    problems: set[str] = set()
    lacking: list[str] = []
    for spec in COLUMNS:
        if change.before[spec.name] is None and change.after[spec.name] is not None:
            try:
                empty = sql_type(spec.mysql_type).convert("")
            except ValueError:
                lacking.append(spec.name)
            else:
                problems.add(f"before.{spec.name} = {empty!r}, expected None")
    if lacking:
        problems.add(f"before lacks {sorted(lacking)}")
    return problems


@pytest.mark.unit
@pytest.mark.parametrize("zone", [UTC, SHANGHAI], ids=["UTC", "Asia-Shanghai"])
@pytest.mark.parametrize("seed", SEEDS)
def test_round_trip_kafkariver(seed: int, zone: dt.tzinfo) -> None:
    """Exact, except where an old NULL is rendered as Canal's "" (see _kafkariver_ambiguity)."""
    pairs = _round_trip("kafkariver-canal", seed, zone)
    ambiguous = 0
    for change, event in pairs:
        expected = _kafkariver_ambiguity(change)
        ambiguous += bool(expected)
        assert set(_problems("kafkariver-canal", change, event, zone, strict=True)) == expected, f"#{change.sequence}"
        assert _problems("kafkariver-canal", change, event, zone) == [], f"#{change.sequence}"
    assert ambiguous < len(pairs) // 10
    _assert_table_order(pairs)


# -------------------------------------------------------------------- ogg-json


@pytest.mark.unit
@pytest.mark.parametrize("zone", [UTC, SHANGHAI], ids=["UTC", "Asia-Shanghai"])
@pytest.mark.parametrize("seed", SEEDS)
def test_round_trip_ogg(seed: int, zone: dt.tzinfo) -> None:
    """Values, ops and order are exact; with db_type MYSQL the two-part name is database.table."""
    pairs = _round_trip("ogg-json", seed, zone)
    for change, event in pairs:
        assert (event.source.database, event.source.schema, event.source.table) == (change.database, None, change.table)
        assert event.source.db_type == "MYSQL"
        assert event.source.transaction_id == str(change.txid)
        assert event.ts_ms == change.ts_ms
        assert event.ingest_ts_ms is not None and event.ingest_ts_ms > change.ts_ms
        assert _problems("ogg-json", change, event, zone) == [], f"#{change.sequence}"
    _assert_table_order(pairs)


# ------------------------------------------------------------ rendering details


@pytest.mark.unit
@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0.0"),
        (-0.0, "-0.0"),
        (-1.5, "-1.5"),
        (10357.0, "10357.0"),
        (12510357.0, "1.2510357E7"),
        (1e-300, "1.0E-300"),
        (0.001, "0.001"),
        (0.0001, "1.0E-4"),
        (3.141592653589793, "3.141592653589793"),
        (1234567.125, "1234567.125"),
        (-1.7976931348623157e308, "-1.7976931348623157E308"),
    ],
)
def test_java_double(value: float, text: str) -> None:
    assert java_double(value) == text
    assert float(text) == value


@pytest.mark.unit
def test_drs_json_is_gson_escaped_with_signed_byte_lists() -> None:
    change = next(c for c in Workload(seed=3, tables=3).run(400) if c.op == "INSERT")
    assert change.after is not None
    change.after["name"] = "<a href='x'>&=</a>\u2028"
    change.after["payload"] = b"\x00\x7f\x80\xff"
    raw = render_drs_json(change, RenderContext())
    assert b"\\u003ca href\\u003d\\u0027x\\u0027\\u003e\\u0026\\u003d\\u003c/a\\u003e\\u2028" in raw
    assert b'"[0, 127, -128, -1]"' in raw
    assert java_byte_list(b"") == "[]"
    doc = orjson.loads(raw)
    assert doc["data"][0]["name"] == change.after["name"]


@pytest.mark.unit
def test_drs_avro_schema_is_the_parse_option() -> None:
    options = render.parse_options("drs-avro")
    assert options["avro_schema"] is DRS_FLAT_SCHEMA
    assert options["options"] == {"avro_schema": DRS_FLAT_SCHEMA}
    fastavro.parse_schema(DRS_FLAT_SCHEMA)
    assert render.parse_options("canal-json") == {}
