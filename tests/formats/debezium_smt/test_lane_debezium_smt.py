"""The Debezium ExtractNewRecordState lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic (with and
without option ``primary_key``, with the table from the message or from the
topic's configured ``db.table``), and on messages whose column values, field
schemas, ``__`` metadata fields and bytes hypothesis mutates.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.cli.generate import messages
from binlake.shared.errors import ConfigError
from binlake.shared.generate.render import parse_options
from binlake.shared.generate.workload import Workload
from binlake.shared.kernel import Lane, Taken, lane_for
from binlake.shared.parsing.context import ParseContext, zone
from tests.corpus_cases import cases

# The Debezium lane's value strategies: the SMT lane reads values with the same code.
from tests.formats.debezium_json.test_lane_debezium import FIELD_SCHEMAS, files, json_scalars, raw_values
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "debezium-smt"
TOPIC = "vendor.topic"
OPTIONS: dict[str, Any] = parse_options(FORMAT)["options"]


def context(zone_name: str = "UTC", source_table: str | None = None, **options: Any) -> ParseContext:
    return ParseContext(
        topic=TOPIC, partition=3, offset=0, source_table=source_table, source_timezone=zone(zone_name), options=options
    )


def the_lane(ctx: ParseContext, topic_tables: dict[str, str] | None = None) -> Lane:
    lane = lane_for(FORMAT, ctx, topic_tables)
    assert lane is not None
    return lane


_LANES: dict[str, tuple[ParseContext, Lane]] = {}


def keyed(primary_key: str) -> tuple[ParseContext, Lane]:
    """The context with option ``primary_key`` and its lane (one per option, so plans are reused)."""
    if primary_key not in _LANES:
        ctx = context(primary_key=primary_key)
        _LANES[primary_key] = ctx, the_lane(ctx)
    return _LANES[primary_key]


_CONFIGURED: dict[tuple[str | None, str], tuple[ParseContext, Lane]] = {}


def configured(source_table: str | None, primary_key: str) -> tuple[ParseContext, Lane]:
    """The context with this ``source_table`` and option ``primary_key``, and its lane (one each)."""
    if (source_table, primary_key) not in _CONFIGURED:
        ctx = context(source_table=source_table, primary_key=primary_key)
        _CONFIGURED[(source_table, primary_key)] = ctx, the_lane(ctx)
    return _CONFIGURED[(source_table, primary_key)]


def python_records(raw: bytes, ctx: ParseContext, offset: int, topic: str = TOPIC) -> Taken | None:
    return python_records_of(FORMAT, raw, ctx, topic, offset)


def check(raw: bytes, ctx: ParseContext, lane: Lane, offset: int = 41, topic: str = TOPIC) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    fast = lane.parse(raw, topic, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(raw, ctx, offset, topic), raw[:600]
    return True


def dumps(doc: Any, compact: bool = True) -> bytes:
    return json.dumps(doc, separators=(",", ":") if compact else None, ensure_ascii=False).encode()


def test_golden_corpus() -> None:
    seen, _ = corpus_agreement(FORMAT, TOPIC)
    # The corpus is mostly schema-less rows (inferred columns: the Python parser's), tombstones
    # and rejects, all declined; its one typed base64 row has a ZonedTimestamp with an offset,
    # which only the Python parser reads (the same row in Debezium's UTC form is taken below).
    assert seen >= 15


def test_golden_corpus_typed_row() -> None:
    case = next(c for c in cases() if c.id == f"{FORMAT}/edge-schema-envelope-typed")
    ctx = case.context()
    lane = the_lane(ctx)
    assert lane.parse(case.raw(), TOPIC, 3, 41) is None
    doc = json.loads(case.raw())
    doc["payload"]["paid_at"] = "2022-11-15T05:12:11Z"
    assert check(dumps(doc), ctx, lane)


@pytest.mark.parametrize(
    ("seed", "zone_name", "keyed_by_option"),
    [(1, "UTC", True), (11, "Asia/Shanghai", True), (2024, "UTC", False), (7, "America/New_York", False)],
)
def test_generated_traffic(seed: int, zone_name: str, keyed_by_option: bool) -> None:
    ctx = context(zone_name, **(OPTIONS if keyed_by_option else {}))
    lane = the_lane(ctx)
    items = messages(FORMAT, Workload(seed=seed, tables=4), 2000, zone_name)
    taken = sum(check(raw, ctx, lane, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated message is an ordinary flattened row
    assert lane.planned() <= 8


TEMPLATE = messages(FORMAT, Workload(seed=5, tables=2), 80, "UTC")
DOCS = [json.loads(raw) for _, raw in TEMPLATE]
COLUMNS = [f["field"] for f in DOCS[0]["schema"]["fields"] if not f["field"].startswith("__")]
META = ["__db", "__table", "__source_ts_ms", "__deleted"]


def without_table(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    doc["payload"].pop("__db")
    doc["payload"].pop("__table")
    return doc


def test_table_from_the_topic() -> None:
    """Rows without ``__table``: the topic's configured db.table (``topic_tables``), else ``source_table``."""
    tables = {TOPIC: "shop.mapped", "other.topic": "plain"}
    lane = the_lane(context(**OPTIONS), tables)
    fallback = the_lane(context(source_table="db.fallback", **OPTIONS), tables)
    for offset, doc in enumerate(DOCS[:20]):
        raw = dumps(without_table(doc))
        assert check(raw, context(source_table="shop.mapped", **OPTIONS), lane, offset)
        assert check(raw, context(source_table="plain", **OPTIONS), lane, offset, topic="other.topic")
        # A topic without a table: a CONFIG reject in Python, declined by the lane.
        assert lane.parse(raw, "unmapped", 3, offset) is None
        assert python_records(raw, context(**OPTIONS), offset, "unmapped") is None
        assert check(raw, context(source_table="db.fallback", **OPTIONS), fallback, offset, topic="unmapped")
        # __db without __table: the configured table in the message's database.
        doc_db = without_table(doc)
        doc_db["payload"]["__db"] = "own"
        assert check(dumps(doc_db), context(source_table="shop.mapped", **OPTIONS), lane, offset)
    for configured in ("db.", "t", ".t", "a.b.c"):
        ctx = context(source_table=configured, **OPTIONS)
        assert check(dumps(without_table(DOCS[0])), ctx, the_lane(ctx))


def test_options() -> None:
    """primary_key, db_type and base64 bytes are the lane's options; others turn it off."""
    taken: list[dict[str, Any]] = [
        {},
        {"primary_key": "id"},
        {"primary_key": "id, name"},
        {"primary_key": ""},
        {"db_type": "mysql"},
        {"bytes_encoding": "base64"},
        {"bytes_encoding": ""},
    ]
    for options in taken:
        ctx = context(**options)
        lane = the_lane(ctx)
        assert all(check(raw, ctx, lane, offset) for offset, (_, raw) in enumerate(TEMPLATE[:10])), options
    for options in ({"bytes_encoding": "hex"}, {"primary_key": "id", "other": "x"}):
        assert lane_for(FORMAT, context(**options)) is None
    for bad in ("id,,name", " "):
        ctx = context(primary_key=bad)
        assert lane_for(FORMAT, ctx) is None
        assert python_records(TEMPLATE[0][1], ctx, 0) is None  # every message a reject
    for options in ({"primary_key": 5}, {"primary_key": ["id", 5]}, {"db_type": 5}, {"other": "x"}):
        with pytest.raises(ConfigError, match="bad option"):
            python_records(TEMPLATE[0][1], context(**options), 0)


def test_takes_and_declines() -> None:
    ctx, lane = keyed("id")
    base = DOCS[0]
    assert check(dumps(base), ctx, lane)
    assert check(dumps(base, compact=False), ctx, lane)

    def row(**fields: Any) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(json.dumps(base))
        doc["payload"].update(fields)
        return doc

    def dropped(*names: str) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(json.dumps(base))
        for name in names:
            doc["payload"].pop(name)
        return doc

    taken = [
        row(__deleted="true"),
        row(__deleted=True),
        row(__deleted=False),
        row(__deleted=None),
        dropped("__deleted"),
        row(__op="c"),
        row(__op="u"),
        row(__op="r"),
        row(__op="d", __deleted=None),
        row(__op="d", __deleted="true"),
        row(__op="c", __deleted="false"),
        row(__source_ts_ms=0),
        row(__source_ts_ms=1735689600),  # seconds
        row(__source_ts_ms=None),
        row(__ts_ms=1735689600123),
        row(__ts_ms=0),
        row(__source_connector="mysql", __source_file="mysql-bin.000003", __source_pos=1234, __source_gtid="g:1"),
        row(__source_connector="", __schema="public"),
        row(__db=""),
        row(__unknown={"any": [1.5, "thing"]}),  # other __ fields are ignored
        row(name=None, note=None),
        dropped("__db", "__table", "__source_ts_ms", "__deleted"),  # table from source_table below
    ]
    with_table = context(source_table="x.y", primary_key="id")
    for doc in taken:
        assert check(dumps(doc), with_table, the_lane(with_table)), doc
    declined: list[Any] = [
        row(__deleted="TRUE"),  # Python reads it, the lane only Debezium's own spelling
        row(__deleted="yes"),
        row(__deleted=1),
        row(__op="x"),
        row(__op=1),
        row(__op="c", __deleted="true"),  # contradictions: rejects
        row(__op="d", __deleted="false"),
        row(__table=5),
        row(__source_pos="1234"),
        row(__source_ts_ms=1.5),
        row(__source_connector="мysql"),
        row(undeclared=1),  # an inferred column
        row(op="c", source={}, after={}),  # a Debezium change event
        row(op_type="I", table="x"),  # a GoldenGate message
        dropped(*COLUMNS),  # only metadata
        dropped("id"),  # the key column is missing
        dropped("__table"),  # no table, none configured
        {"payload": base["payload"]},  # no schema: inferred columns
        {"schema": base["schema"], "payload": base["payload"], "x": 1},  # then the whole object is the row
        {"payload": base["payload"], "schema": base["schema"]},
        {"schema": base["schema"], "payload": None},  # a tombstone
        {"schema": base["schema"], "payload": []},
        base["payload"],
    ]
    for doc in declined:
        assert lane.parse(dumps(doc), TOPIC, 3, 0) is None, doc
    assert lane.parse(b"", TOPIC, 3, 0) is None
    assert lane.parse(b"null", TOPIC, 3, 0) is None
    assert lane.parse(dumps(base), TOPIC, -1, 0) is None  # outside the order key's range
    assert lane.parse(dumps(base)[:-1] + b',"payload":{}}', TOPIC, 3, 0) is None  # a repeated key


PLACEHOLDER = "@@value@@"


def with_raw_value(doc: dict[str, Any], column: str, value: str, deleted: bool) -> bytes:
    doc = json.loads(json.dumps(doc))
    doc["payload"][column] = PLACEHOLDER
    doc["payload"]["__deleted"] = "true" if deleted else "false"
    return dumps(doc).replace(dumps(PLACEHOLDER), value.encode())


@settings(max_examples=600)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    column=st.sampled_from([*COLUMNS, "new"]),
    value=raw_values,
    deleted=st.booleans(),
    key=st.sampled_from(["", "{}", "id,{}"]),
)
def test_mutated_values(index: int, column: str, value: str, deleted: bool, key: str) -> None:
    """``key``: option primary_key, ``{}`` the mutated column (none: no key columns)."""
    ctx, lane = keyed(key.format(column))
    check(with_raw_value(DOCS[index], column, value, deleted), ctx, lane)


@settings(max_examples=600)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    column=st.sampled_from(COLUMNS),
    schema=st.sampled_from(FIELD_SCHEMAS),
    value=raw_values,
    deleted=st.booleans(),
    key=st.sampled_from(["", "{}", "{},name"]),
)
def test_field_schemas(index: int, column: str, *, schema: dict[str, Any], value: str, deleted: bool, key: str) -> None:
    """``key`` as in ``test_mutated_values``: every Connect type as a key column."""
    doc = json.loads(json.dumps(DOCS[index]))
    fields = doc["schema"]["fields"]
    doc["schema"]["fields"] = [{**schema, "field": column} if f["field"] == column else f for f in fields]
    ctx, lane = keyed(key.format(column))
    check(with_raw_value(doc, column, value, deleted), ctx, lane)


METADATA = ["__deleted", "__op", "__table", "__db", "__schema", "__source_connector", "__source_file",
            "__source_pos", "__source_gtid", "__source_ts_ms", "__ts_ms", "__other"]  # fmt: skip
SOURCE_TABLES = [None, "", "db.t", "t", "a.b.c", "db."]


@settings(max_examples=800)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from(METADATA),
    value=json_scalars
    | st.lists(json_scalars, max_size=2)
    | files
    | st.sampled_from(["c", "u", "d", "r", "true", "false", "True", " true", "mysql"]),
    drop=st.sampled_from([(), ("__table",), ("__db", "__table"), ("__deleted",)]),
    source_table=st.sampled_from(SOURCE_TABLES),
    key=st.sampled_from(["", "id"]),
)
def test_mutated_metadata(
    index: int, field: str, value: Any, *, drop: tuple[str, ...], source_table: str | None, key: str
) -> None:
    doc = json.loads(json.dumps(DOCS[index]))
    doc["payload"][field] = value
    for name in drop:
        doc["payload"].pop(name, None)
    try:
        raw = dumps(doc)
    except ValueError:
        return
    ctx, lane = configured(source_table, key)
    check(raw, ctx, lane)


@settings(max_examples=300)
@given(index=st.integers(min_value=0, max_value=len(TEMPLATE) - 1), data=st.data())
def test_flipped_bytes(index: int, data: st.DataObject) -> None:
    ctx, lane = keyed("id")
    raw = bytearray(TEMPLATE[index][1])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    check(bytes(raw), ctx, lane)
    check(bytes(raw[: data.draw(st.integers(0, len(raw)))]), ctx, lane)
