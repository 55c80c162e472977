"""The GoldenGate JSON lane against the Python path, byte for byte.

Whatever the lane takes must give exactly what the Python parser + Avro encoder
+ record key give (key bytes, value bytes, table, op, event time); it may
decline anything. Checked on the golden corpus, on generated traffic (UTC and
zones with DST), and on messages whose values (raw JSON texts at the edges of
each reading, in either image: the changed columns compare them), operation
fields, time stamps and bytes hypothesis mutates.
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

# Untyped values are read by the Maxwell lane's code: its value strategies apply as they are.
from tests.formats.maxwell_json.test_lane_maxwell import NUMBER_TEXTS, json_scalars, raw_values
from tests.support.lane_support import NEEDS_LANE, corpus_agreement
from tests.support.lane_support import python_records as python_records_of

pytestmark = [
    pytest.mark.unit,
    NEEDS_LANE,
]

FORMAT = "ogg-json"
TOPIC = "vendor.topic"
OPTIONS: dict[str, Any] = parse_options(FORMAT)["options"]
ZONES = ["UTC", "Asia/Shanghai", "America/New_York", "Europe/London"]


def context(zone_name: str = "UTC", **options: Any) -> ParseContext:
    return ParseContext(topic=TOPIC, partition=3, offset=0, source_timezone=zone(zone_name), options=options)


_LANES: dict[tuple[str, str | None], tuple[ParseContext, Lane]] = {}


def configured(zone_name: str = "UTC", db_type: str | None = None) -> tuple[ParseContext, Lane]:
    """The context in this zone with option ``db_type`` (if any), and its lane (one each)."""
    if (zone_name, db_type) not in _LANES:
        ctx = context(zone_name, **({} if db_type is None else {"db_type": db_type}))
        lane = lane_for(FORMAT, ctx)
        assert lane is not None
        _LANES[(zone_name, db_type)] = ctx, lane
    return _LANES[(zone_name, db_type)]


def python_records(raw: bytes, ctx: ParseContext, offset: int) -> Taken | None:
    return python_records_of(FORMAT, raw, ctx, TOPIC, offset)


def check(raw: bytes, zone_name: str = "UTC", db_type: str | None = None, offset: int = 41) -> bool:
    """Assert the lane agrees with Python on ``raw``; True when the lane took it."""
    ctx, lane = configured(zone_name, db_type)
    fast = lane.parse(raw, TOPIC, 3, offset)
    if fast is None:
        return False
    assert fast == python_records(raw, ctx, offset), raw[:600]
    return True


def dumps(doc: Any) -> bytes:
    return json.dumps(doc, ensure_ascii=False).encode()


def test_golden_corpus() -> None:
    _, taken = corpus_agreement(FORMAT, TOPIC)
    # Declined: truncates, _isMissing markers, the rejects.
    assert taken >= 9


@pytest.mark.parametrize(("seed", "zone_name"), [(1, "UTC"), (11, "Asia/Shanghai"), (7, "America/New_York")])
def test_generated_traffic(seed: int, zone_name: str) -> None:
    db_type = OPTIONS["db_type"]
    items = messages(FORMAT, Workload(seed=seed, tables=4), 2000, zone_name)
    taken = sum(check(raw, zone_name, db_type, offset) for offset, (_, raw) in enumerate(items))
    assert taken == len(items)  # every generated change is an ordinary operation


TEMPLATE = messages(FORMAT, Workload(seed=5, tables=2), 80, "UTC")
DOCS = [json.loads(raw) for _, raw in TEMPLATE]
UPDATE = next(doc for doc in DOCS if doc["op_type"] == "U")
COLUMNS = sorted(UPDATE["after"])


def variant(doc: dict[str, Any], **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(json.dumps(doc))
    for name, value in fields.items():
        if value is ...:
            out.pop(name, None)
        else:
            out[name] = value
    return out


def test_options() -> None:
    """db_type is the lane's one option (any value: the parser's rule picks ORACLE for odd ones)."""
    for db_type in (None, "MYSQL", "oracle", "tidb", "", "postgres"):
        assert all(check(raw, "UTC", db_type) for _, raw in TEMPLATE[:20]), db_type
    with pytest.raises(ConfigError, match="bad option"):
        check(TEMPLATE[0][1], "UTC", 5)  # type: ignore[arg-type]
    assert lane_for(FORMAT, context(bytes_encoding="hex")) is None
    assert lane_for(FORMAT, context(db_type="MYSQL", other="x")) is None


def test_takes_and_declines() -> None:
    insert = DOCS[0]
    delete = next(doc for doc in DOCS if doc["op_type"] == "D")
    before, after = UPDATE["before"], UPDATE["after"]
    taken = [
        variant(insert, table="T"),
        variant(insert, table="CAT.SCH.T"),
        variant(insert, op_ts=None, current_ts=...),
        variant(insert, op_ts="2025-01-01T00:00:00Z", current_ts="2024-03-10 02:30:00.5"),
        variant(insert, op_ts="1969-12-31 23:59:59.9995", current_ts="0001-01-01T00:00:00.000001Z"),
        variant(insert, pos="0", tokens=None),
        variant(insert, pos="9" * 30),
        variant(insert, tokens={"txid": 7, "csn": "123", "xid": "ignored"}),
        variant(insert, tokens={"TXID": "", "XID": "x", "scn": 12, "SCN": None}),
        variant(insert, tokens={"other": [1.5]}),
        variant(insert, primary_keys=None),
        variant(insert, primary_keys=[]),
        variant(insert, primary_keys=["id", "name"]),
        variant(insert, before=None),
        variant(insert, extra={"ignored": 1.5}),
        variant(UPDATE, before=None),
        variant(UPDATE, after=None),
        variant(UPDATE, after={"id": after["id"]}),  # compressed: key and changed columns only
        variant(UPDATE, after={**after, "qty": None}, before={**before, "qty": 0}),
        variant(UPDATE, before={k: v for k, v in before.items() if k != "name"}),
        variant(UPDATE, before={k: v for k, v in before.items() if k != "id"}, after=after, primary_keys=[]),
        variant(delete, after=None),
        variant(insert, after={}, primary_keys=[]),
    ]
    for doc in taken:
        assert check(dumps(doc), "Asia/Shanghai"), doc
        assert check(dumps(doc)), doc
    declined: list[Any] = [
        variant(insert, op_type="T", after=None),  # a TRUNCATE event
        variant(insert, op_type="X"),
        variant(insert, op_type=None),
        variant(insert, table=None),
        variant(insert, table="a.b.c.d"),
        variant(insert, table="a..b"),
        variant(insert, table=5),
        variant(insert, op_ts="2025-01-01 00:00:00+08:00"),
        variant(insert, op_ts="1735689600"),
        variant(insert, op_ts=1735689600),
        variant(insert, current_ts="2025-02-30 00:00:00"),
        variant(insert, pos=10000000204),  # str(int) in Python
        variant(insert, pos=""),
        variant(insert, pos="9" * 31),
        variant(insert, pos="12a"),
        variant(insert, pos=None),
        variant(insert, tokens=[]),
        variant(insert, tokens={"txid": True}),
        variant(insert, tokens={"csn": 1.5}),
        variant(insert, primary_keys="id"),
        variant(insert, primary_keys=[1]),
        variant(insert, primary_keys=["missing"]),
        variant(insert, after=None),
        variant(insert, before=insert["after"]),
        variant(insert, after=[]),
        variant(insert, after={**insert["after"], "qty_isMissing": False}),
        variant(delete, before=None),
        variant(delete, after=delete["before"]),
        variant(UPDATE, before=None, after=None),
        variant(UPDATE, before={k: v for k, v in before.items() if k != "id"}),  # the key is in before
        {"payload": insert},
        [insert],
    ]
    _, lane = configured()
    for doc in declined:
        assert lane.parse(dumps(doc), TOPIC, 3, 0) is None, doc
    assert lane.parse(b"", TOPIC, 3, 0) is None
    assert lane.parse(b'{"op_type":"I","op_type":"I"}', TOPIC, 3, 0) is None  # a repeated key


def test_mysql_family_database() -> None:
    """With a MySQL-family db_type a two-part table is database.table, else schema.table."""
    for db_type in ("MYSQL", "mariadb", "OB_MYSQL", "TIDB", "ORACLE", None):
        for table in ("shop.t", "T", "c.s.t"):
            assert check(dumps(variant(DOCS[0], table=table)), "UTC", db_type), (db_type, table)


# Values the changed columns compare: Python's == (numbers by value, bools only with bools).
SAME_OR_NOT = ["1", "1.0", "1.00", "1E+0", "10E-1", "0", "-0.0", "0E+5", "0.0", "true", "false", '"1"', "null",
               "2", "1e400", "9223372036854775808", "9223372036854775808.0", "{}", '"{}"', "[1]", '"[1]"',
               '{"a":1.0}', '{"a":1}', '"{\\"a\\":1}"']  # fmt: skip


def test_changed_columns() -> None:
    for old in SAME_OR_NOT:
        for new in SAME_OR_NOT:
            doc = variant(
                UPDATE, before={**UPDATE["before"], "qty": "@old@"}, after={**UPDATE["after"], "qty": "@new@"}
            )
            raw = dumps(doc).replace(b'"@old@"', old.encode()).replace(b'"@new@"', new.encode())
            assert check(raw), (old, new)


PLACEHOLDER = "@@value@@"


def with_raw_value(doc: dict[str, Any], where: str, column: str, value: str) -> bytes:
    doc = json.loads(json.dumps(doc))
    if where == "key":
        doc["primary_keys"] = [column]
        where = "before" if doc.get("before") is not None else "after"
    other = {"before": "after", "after": "before"}[where]
    image = doc[where] if doc.get(where) is not None else doc[other]
    image[column] = PLACEHOLDER
    return dumps(doc).replace(dumps(PLACEHOLDER), value.encode())


@settings(max_examples=800)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    column=st.sampled_from([*COLUMNS, "new"]),
    value=raw_values,
    where=st.sampled_from(["before", "after", "key"]),
)
def test_mutated_values(index: int, column: str, value: str, where: str) -> None:
    check(with_raw_value(DOCS[index], where, column, value))


def test_numbers() -> None:
    for text in NUMBER_TEXTS:
        taken = text != "-0"  # declined: Python reads it as the int 0
        for where in ("before", "after", "key"):
            assert check(with_raw_value(UPDATE, where, "v", text)) == taken, text
        assert check(with_raw_value(UPDATE, "after", "v", f'{{"a":[{text}]}}')) == taken, text


timestamps = st.one_of(
    st.datetimes().map(lambda d: d.isoformat(sep=" ")),
    st.datetimes().map(lambda d: d.isoformat(timespec="milliseconds") + "Z"),
    st.tuples(st.datetimes(), st.sampled_from(" T")).map(lambda p: p[0].isoformat(sep=p[1])),
    st.sampled_from(
        ["2024-03-10 02:30:00", "2024-11-03 01:30:00.5", "2024-03-31T01:30:00", "2024-10-27 01:30:00.999999",
         "2025-01-01 00:00:00.1234567", "2025-01-01 00:00:00.", "2025-1-01 00:00:00", "2025-01-01 24:00:00",
         "2025-01-01", "0000-00-00 00:00:00", "2025-01-01 00:00:00 UTC", " 2025-01-01 00:00:00", "1735689600.5"]
    ),
)  # fmt: skip


@settings(max_examples=600)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from(["op_ts", "current_ts"]),
    value=timestamps | json_scalars,
    zone_name=st.sampled_from(ZONES),
)
def test_mutated_times(index: int, field: str, value: Any, zone_name: str) -> None:
    check(dumps(variant(DOCS[index], **{field: value})), zone_name)


tables = st.sampled_from(["A.B", "A.B.C", "A", "", ".A", "A.", "A.B.C.D", "库.表"]) | st.text(max_size=8)
positions = st.from_regex(r"[0-9]{0,32}", fullmatch=True) | st.sampled_from(["１２", "1 ", "-1", "+1"])
tokens = st.dictionaries(st.sampled_from(["txid", "TXID", "xid", "XID", "csn", "CSN", "scn", "SCN", "x"]), json_scalars)


@settings(max_examples=600)
@given(
    index=st.integers(min_value=0, max_value=len(DOCS) - 1),
    field=st.sampled_from(["op_type", "table", "pos", "tokens", "primary_keys", "before", "after", "payload"]),
    value=json_scalars
    | st.lists(json_scalars | st.sampled_from(COLUMNS), max_size=3)
    | tables
    | positions
    | tokens
    | st.sampled_from(["I", "U", "D", "T", "i"]),
    drop=st.booleans(),
    db_type=st.sampled_from([None, "MYSQL"]),
)
def test_mutated_operation(index: int, field: str, value: Any, drop: bool, db_type: str | None) -> None:
    try:
        raw = dumps(variant(DOCS[index], **{field: ... if drop else value}))
    except ValueError:
        return
    check(raw, "UTC", db_type)


@settings(max_examples=300)
@given(index=st.integers(min_value=0, max_value=len(TEMPLATE) - 1), data=st.data())
def test_flipped_bytes(index: int, data: st.DataObject) -> None:
    raw = bytearray(TEMPLATE[index][1])
    for _ in range(data.draw(st.integers(1, 3))):
        raw[data.draw(st.integers(0, len(raw) - 1))] = data.draw(st.integers(0, 255))
    check(bytes(raw))
    check(bytes(raw[: data.draw(st.integers(0, len(raw)))]))
