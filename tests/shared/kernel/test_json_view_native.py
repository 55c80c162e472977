"""The JSON view (``json_view.render``: the kernel's ``Encoder.json``, and ``_kernel.render_json`` of a record, which
``binlake normalize`` prints) held to references of its own: the golden corpus's expected lines byte for byte, and
renderings of every value kind written by hand from the rules in ``shared/codec/json_view.py``."""

from __future__ import annotations

import base64
import datetime as dt
from decimal import Decimal
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlake.shared.codec import avro, json_view
from binlake.shared.event.model import ChangeEvent, Column, Columns, Ddl, Origin, Source
from binlake.shared.event.values import BigInt, SqlTime, Unparsed, Value, decimal_text
from binlake.shared.kernel._kernel import render_json
from binlake.shared.parsing.result import Parsed
from tests.corpus_cases import cases

pytestmark = pytest.mark.unit
UTC = dt.UTC


def _of_record(event: ChangeEvent) -> bytes:
    return render_json(avro.encode(event), avro.fingerprint())


def _event(after: dict[str, Value] | None, before: dict[str, Value] | None = None, **source: str) -> ChangeEvent:
    return ChangeEvent(
        op="UPDATE" if before is not None else "INSERT",
        source=Source("canal-json", "MYSQL", "db", None, "t", binlog_pos=4, **source),
        order_key="00000000000000000001.00000000000000000002.000000",
        ts_ms=-1,
        ingest_ts_ms=None,
        primary_key=["id", 'odd "name"\n'],
        columns=[Column("id", "bigint unsigned", "uint64"), Column("d", "decimal(65,30)", "decimal", 65, 30, True)],
        before=before,
        after=after,
        changed_columns=None if before is None else ["id"],
        ddl=None,
        origin=Origin("topic", 3, 2**62, 1),
    )


def test_every_golden_event_is_its_expected_line() -> None:
    checked = 0
    for case in cases():
        outcome = case.run()
        if not isinstance(outcome, Parsed):
            continue
        path = case.folder / f"{case.name}.out.jsonl"
        expected = [line for line in path.read_bytes().splitlines() if line.strip()]
        assert [json_view.render(event) for event in outcome.events] == expected, case.id
        assert [_of_record(event) for event in outcome.events] == expected, case.id
        checked += len(expected)
    assert checked > 150


# Every value kind (tests/shared/test_codecs.py's ALL_KINDS and more), with its JSON view written by hand.
ALL_KINDS: list[tuple[str, Value, bytes]] = [
    ("null", None, b"null"),
    ("true", True, b"true"),
    ("false", False, b"false"),
    ("zero", 0, b"0"),
    ("int", 1, b"1"),
    ("min", -(2**63), b"-9223372036854775808"),
    ("max", 2**63 - 1, b"9223372036854775807"),
    ("big", BigInt(2**64 - 1), b'"18446744073709551615"'),
    ("negbig", BigInt(-(2**70)), b'"-1180591620717411303424"'),
    ("float", -0.5, b"-0.5"),
    ("whole", 1.0, b"1.0"),
    ("hundred", 100.0, b"100.0"),
    ("negzero", -0.0, b"-0.0"),
    ("tenth", 0.1, b"0.1"),
    ("sum", 0.1 + 0.2, b"0.30000000000000004"),
    ("e15", 1e15, b"1000000000000000.0"),
    ("e16", 1e16, b"1e+16"),
    ("e17", 1.2345678901234568e17, b"1.2345678901234568e+17"),
    ("e-5", 1e-5, b"0.00001"),
    ("e-5b", 2.5e-5, b"0.000025"),
    ("e-6", 1e-6, b"1e-6"),
    ("e-7", 1.5e-7, b"1.5e-7"),
    ("largest", 1.7976931348623157e308, b"1.7976931348623157e+308"),
    ("smallest", 5e-324, b"5e-324"),
    ("nan", float("nan"), b"null"),
    ("inf", float("inf"), b"null"),
    ("-inf", float("-inf"), b"null"),
    ("decimal", Decimal("1.50"), b'"1.50"'),
    ("longdecimal", Decimal("-12345678901234567890.0123456789"), b'"-12345678901234567890.0123456789"'),
    ("tiny_decimal", Decimal("1E-400"), b'"1E-400"'),
    ("decimal_exp", Decimal("1E+3"), b'"1000"'),
    ("decimal_small", Decimal("-0.0000000001"), b'"-0.0000000001"'),
    ("text", "你好 🌍", '"你好 🌍"'.encode()),
    ("escapes", 'q"b\\n\nt\tc\x01d\x1fe\x7fl\u2028', b'"q\\"b\\\\n\\nt\\tc\\u0001d\\u001fe\x7fl\xe2\x80\xa8"'),
    ("empty", "", b'""'),
    ("bytes", b"\x00\xff", b'"AP8="'),
    ("bytes1", b"\x00\x01", b'"AAE="'),
    ("bytes3", b"abc", b'"YWJj"'),
    ("nobytes", b"", b'""'),
    ("date", dt.date(1, 1, 1), b'"0001-01-01"'),
    ("epoch_date", dt.date(1970, 1, 1), b'"1970-01-01"'),
    ("leap", dt.date(2024, 2, 29), b'"2024-02-29"'),
    ("last_date", dt.date(9999, 12, 31), b'"9999-12-31"'),
    ("time", SqlTime(-3020399000000), b'"-838:59:59"'),
    ("time_frac", SqlTime(-3020399000001), b'"-838:59:59.000001"'),
    ("midnight", SqlTime(0), b'"00:00:00"'),
    ("time_ms", SqlTime(45296_500000), b'"12:34:56.500000"'),
    ("local", dt.datetime(9999, 12, 31, 23, 59, 59, 999999), b'"9999-12-31T23:59:59.999999"'),
    ("local_whole", dt.datetime(2024, 5, 6, 7, 8, 9), b'"2024-05-06T07:08:09"'),
    ("first_local", dt.datetime(1, 1, 1), b'"0001-01-01T00:00:00"'),
    ("instant", dt.datetime(1969, 12, 31, 23, 59, 59, 1, tzinfo=UTC), b'"1969-12-31T23:59:59.000001Z"'),
    ("instant_whole", dt.datetime(2024, 5, 6, 7, 8, 9, tzinfo=UTC), b'"2024-05-06T07:08:09Z"'),
    (
        "instant_offset",
        dt.datetime(2024, 5, 6, 7, 8, 9, 120000, tzinfo=dt.timezone(dt.timedelta(hours=8))),
        b'"2024-05-05T23:08:09.120000Z"',
    ),
    ("unparsed", Unparsed("0000-00-00"), b'{"unparsed":"0000-00-00"}'),
    ("unparsed_dt", Unparsed('0000-00-00 00:00:00 "x"'), b'{"unparsed":"0000-00-00 00:00:00 \\"x\\""}'),
]


@pytest.mark.parametrize(("value", "expected"), [(v, e) for _, v, e in ALL_KINDS], ids=[n for n, _, _ in ALL_KINDS])
def test_every_value_kind(value: Value, expected: bytes) -> None:
    assert avro.encoder().json_value(value) == expected
    assert json_view.render_value(value) == orjson.loads(expected)


def test_a_whole_event_written_by_hand() -> None:
    after = {name: value for name, value, _ in ALL_KINDS}
    event = _event(after, {"id": BigInt(2**64 - 1)}, gtid="g\u0001", sequence="é\u2028")
    event.columns = Columns(event.columns)  # shared by a table shape: its Avro cached, the view the same
    image = b",".join(orjson.dumps(name) + b":" + text for name, _, text in ALL_KINDS)
    expected = (
        b'{"op":"UPDATE","source":{"format":"canal-json","db_type":"MYSQL","database":"db","schema":null,'
        b'"table":"t","tenant":null,"binlog_file":null,"binlog_pos":4,"gtid":"g\\u0001","scn":null,'
        b'"checkpoint":null,"transaction_id":null,"sequence":"\xc3\xa9\xe2\x80\xa8"},'
        b'"order_key":"00000000000000000001.00000000000000000002.000000","ts_ms":-1,"ingest_ts_ms":null,'
        b'"primary_key":["id","odd \\"name\\"\\n"],'
        b'"columns":[{"name":"id","source_type":"bigint unsigned","logical_type":"uint64","precision":null,'
        b'"scale":null,"inferred":false},{"name":"d","source_type":"decimal(65,30)","logical_type":"decimal",'
        b'"precision":65,"scale":30,"inferred":true}],'
        b'"before":{"id":"18446744073709551615"},"after":{' + image + b'},"changed_columns":["id"],"ddl":null,'
        b'"origin":{"topic":"topic","partition":3,"offset":4611686018427387904,"row":1}}'
    )
    for _ in range(2):
        assert json_view.render(event) == expected
        assert _of_record(event) == expected


def test_ddl_event_and_empty_images() -> None:
    event = _event(None, None)
    event.op = "DDL"
    event.columns = []
    event.primary_key = []
    event.ddl = Ddl('ALTER TABLE t ADD c int -- \\ "quoted"\t', "ALTER_TABLE")
    expected = (
        b'{"op":"DDL","source":{"format":"canal-json","db_type":"MYSQL","database":"db","schema":null,'
        b'"table":"t","tenant":null,"binlog_file":null,"binlog_pos":4,"gtid":null,"scn":null,'
        b'"checkpoint":null,"transaction_id":null,"sequence":null},'
        b'"order_key":"00000000000000000001.00000000000000000002.000000","ts_ms":-1,"ingest_ts_ms":null,'
        b'"primary_key":[],"columns":[],"before":null,"after":null,"changed_columns":null,'
        b'"ddl":{"sql":"ALTER TABLE t ADD c int -- \\\\ \\"quoted\\"\\t","kind":"ALTER_TABLE"},'
        b'"origin":{"topic":"topic","partition":3,"offset":4611686018427387904,"row":1}}'
    )
    assert json_view.render(event) == expected
    assert _of_record(event) == expected
    event = _event({}, {})
    assert b'"before":{},"after":{},' in json_view.render(event)


def _reference(value: Value) -> bytes:
    """The rules of json_view.py's docstring, spelled by Python: orjson for numbers and strings."""
    if isinstance(value, BigInt):
        return orjson.dumps(str(value))
    if isinstance(value, Decimal):
        return orjson.dumps(decimal_text(value))
    if isinstance(value, bytes):
        return orjson.dumps(base64.b64encode(value).decode())
    if isinstance(value, dt.datetime):
        text = value.replace(tzinfo=None).isoformat() if value.tzinfo is None else value.isoformat()[:-6] + "Z"
        return orjson.dumps(text)
    if isinstance(value, dt.date):
        return orjson.dumps(f"{value.year:04}-{value.month:02}-{value.day:02}")
    if isinstance(value, SqlTime):
        return orjson.dumps(value.isoformat())
    if isinstance(value, Unparsed):
        return orjson.dumps({"unparsed": value.text})
    return orjson.dumps(value)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.integers(2**63, 2**80).map(BigInt),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.binary(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.dates(),
    st.datetimes(),
    st.datetimes(timezones=st.just(UTC)),
    st.integers(-(839 * 3600 * 10**6), 839 * 3600 * 10**6).map(SqlTime),
    st.text().map(Unparsed),
)


@given(st.dictionaries(st.text(), VALUES, max_size=12), st.dictionaries(st.text(max_size=3), VALUES, max_size=3))
def test_any_values(after: dict[str, Value], before: dict[str, Value]) -> None:
    event = _event(after, before)
    line = json_view.render(event)
    assert _of_record(event) == line
    parsed: dict[str, Any] = orjson.loads(line)
    for name, image in (("after", after), ("before", before)):
        assert parsed[name] == {key: orjson.loads(_reference(value)) for key, value in image.items()}
        rendered = b",".join(orjson.dumps(key) + b":" + _reference(value) for key, value in image.items())
        assert f'"{name}":{{'.encode() + rendered + b"}" in line
    for value in after.values():
        assert avro.encoder().json_value(value) == _reference(value)


def test_what_is_no_canonical_value_is_refused() -> None:
    for value, error in (
        (object(), TypeError),
        ([1], TypeError),
        (2**63, OverflowError),
        ("\ud800", UnicodeEncodeError),
    ):
        with pytest.raises(error):
            avro.encoder().json_value(value)
        with pytest.raises(error):
            json_view.render(_event({"v": value}))  # type: ignore[dict-item]
    # An instant whose UTC date is before year 1: no Python date holds it, so the view cannot spell it.
    early = dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=1)))
    with pytest.raises(ValueError, match="outside the JSON view"):
        avro.encoder().json_value(early)
    with pytest.raises(ValueError, match="outside the JSON view"):
        json_view.render(_event({"v": early}))


def test_other_bytes_are_a_value_error() -> None:
    good = avro.encode(_event({"a": 1}))
    for bad in (b"", good[:-1], good + b"\x00", b"\xc3\x01" + b"\x00" * 8 + good[10:]):
        with pytest.raises(ValueError, match="not a canonical change event"):
            render_json(bad, avro.fingerprint())
