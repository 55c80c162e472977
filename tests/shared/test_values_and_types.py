"""Value readers: temporal renderings, binary encodings, SQL type texts, exact JSON numbers."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.event.values import BigInt, SqlTime, Unparsed, decimal_text, integer
from binlake.shared.parsing import binary, temporal
from binlake.shared.parsing.ddl import ddl_kind
from binlake.shared.parsing.errors import RejectError, UnreadableValue
from binlake.shared.parsing.jsondoc import decode_and_parse
from binlake.shared.parsing.order import binlog_index, order_key
from binlake.shared.parsing.sqltypes import sql_type

UTC = dt.UTC
pytestmark = pytest.mark.unit


def test_integer_wraps_only_outside_int64() -> None:
    assert type(integer(2**63 - 1)) is int
    assert type(integer(-(2**63))) is int
    assert isinstance(integer(2**63), BigInt)
    assert integer(2**64 - 1) == 18446744073709551615


@pytest.mark.parametrize(
    ("text", "micros"),
    [("00:00:00", 0), ("838:59:59", 3020399 * 10**6), ("-01:00:00.5", -3600_500_000), ("12:34:56.123456789", None)],
)
def test_parse_time(text: str, micros: int | None) -> None:
    value = temporal.parse_time(text)
    if micros is None:
        assert value == SqlTime(((12 * 60 + 34) * 60 + 56) * 10**6 + 123456)  # nanos truncated
    else:
        assert value.micros == micros
    assert temporal.parse_time(value.isoformat()) == value


def test_time_rejects_bad_minutes() -> None:
    with pytest.raises(ValueError, match="below 60"):
        temporal.parse_time("10:60:00")


def test_zero_dates_are_kept_verbatim() -> None:
    assert temporal.parse_date("0000-00-00") == Unparsed("0000-00-00")
    assert temporal.parse_local_datetime("2020-00-10 00:00:00") == Unparsed("2020-00-10 00:00:00")
    with pytest.raises(ValueError):
        temporal.parse_date("2020-13-45")


def test_instant_renderings() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")
    expected = dt.datetime(2020, 11, 24, 16, 1, 2, 12345, tzinfo=UTC)
    assert temporal.parse_instant("1606233662.012345", UTC) == expected
    assert temporal.parse_instant("2020-11-25 00:01:02.012345 Asia/Shanghai", UTC) == expected
    assert temporal.parse_instant("2020-11-25 00:01:02.012345", shanghai) == expected
    assert temporal.parse_instant("2020-11-24T16:01:02.012345Z", shanghai) == expected
    assert temporal.parse_instant("2020-11-25T00:01:02.012345123+08:00", UTC) == expected
    assert temporal.parse_instant("-1.5", UTC) == dt.datetime(1969, 12, 31, 23, 59, 58, 500000, tzinfo=UTC)
    # A space-separated text with its own offset keeps it, whatever the wall-clock zone.
    assert temporal.parse_instant("2020-11-25 00:01:02+08:00", shanghai) == expected.replace(microsecond=0)
    assert temporal.parse_instant("2020-11-25 00:01:02.012345+08:00", UTC) == expected
    assert temporal.parse_instant("2020-11-24 16:01:02.012", UTC) == expected.replace(microsecond=12000)


def test_compact_ckafka_time_uses_zone() -> None:
    assert temporal.compact_local_to_ms("19700101080000", ZoneInfo("Asia/Shanghai")) == 0


@pytest.mark.parametrize(
    ("encoding", "text", "expected"),
    [
        ("latin1", "\x00\xffab", b"\x00\xffab"),
        ("base64", "aGVsbG8gd29ybGQ=", b"hello world"),
        ("hex", "6A00", b"j\x00"),
        ("list", "[106, 103, -1]", b"jg\xff"),
        ("list", "[ 0 ,255 ]", b"\x00\xff"),
        ("list", "[]", b""),
    ],
)
def test_binary_decoders(encoding: str, text: str, expected: bytes) -> None:
    assert binary.DECODERS[encoding](text) == expected


@pytest.mark.parametrize(("encoding", "text"), [("latin1", "中"), ("base64", "!!"), ("hex", "6"), ("list", "[300]")])
def test_binary_decoders_refuse_garbage(encoding: str, text: str) -> None:
    with pytest.raises(ValueError):
        binary.DECODERS[encoding](text)


@pytest.mark.parametrize(
    ("encoding", "text", "message"),
    [
        ("base64", "aGk", "invalid base64: Incorrect padding (in a string of 3 characters)"),
        ("base64", "aG=k", "invalid base64: Discontinuous padding not allowed (in a string of 4 characters)"),
        ("base64", "aGé=", "invalid base64: a non-ASCII character at position 2 of a string of 4 characters"),
        ("list", "[1, -129]", "byte list item 1 is outside -128..255: a string of 4 characters"),
        ("list", "[1, x]", "byte list item 1 is not an integer: a string of 1 character"),
    ],
)
def test_binary_decoder_errors_say_what_is_wrong(encoding: str, text: str, message: str) -> None:
    # Where the text goes wrong and its length, never the text: reasons carry no row values.
    with pytest.raises(UnreadableValue) as info:
        binary.DECODERS[encoding](text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "text",
    [
        *("1.500", "-0", "0.000001", "0.0000001", "0E-10", "123E+2", "-0.0000000001", "1E-400", "1E+41"),
        *("NaN", "-Infinity", "1972293937850893561724804200.0484140889", "0." + "0" * 45 + "1", "1" * 50 + ".5"),
    ],
)
def test_decimal_text_is_plain_unless_the_exponent_is_extreme(text: str) -> None:
    value = Decimal(text)
    exponent = value.as_tuple().exponent
    plain = isinstance(exponent, int) and -40 <= exponent <= 40 and -40 <= value.adjusted() <= 40
    assert decimal_text(value) == (f"{value:f}" if plain else str(value))


@pytest.mark.parametrize(
    ("text", "logical", "precision", "scale"),
    [
        ("bigint(20) unsigned", "uint64", None, None),
        ("BIGINT UNSIGNED ZEROFILL", "uint64", None, None),
        ("int(11)", "int32", None, None),
        ("int unsigned", "int64", None, None),
        ("tinyint(1)", "int8", None, None),
        ("decimal(10,4)", "decimal", 10, 4),
        ("decimal(10)", "decimal", 10, 0),
        ("float(30)", "float64", None, None),
        ("double precision", "float64", None, None),
        ("varchar(15)", "string", None, None),
        ("enum('a','b')", "enum", None, None),
        ("datetime(6)", "datetime", 6, None),
        ("timestamp", "timestamp", None, None),
        ("bit(10)", "bit", 10, None),
        ("longblob", "bytes", None, None),
        ("geometry", "geometry", None, None),
        ("mystery_type", "unknown", None, None),
    ],
)
def test_mysql_type_texts(text: str, logical: str, precision: int | None, scale: int | None) -> None:
    t = sql_type(text)
    assert (t.logical, t.precision, t.scale) == (logical, precision, scale)


def test_dialects_differ_where_vendors_do() -> None:
    assert sql_type("BIGINT", "oms").logical == "integer"  # OMS: beyond 64 bits
    assert sql_type("INT64", "oms").logical == "int64"
    assert sql_type("DATE", "oracle").logical == "datetime"  # Oracle DATE has a time part
    assert sql_type("TIMESTAMP(6) WITH TIME ZONE", "oracle").logical == "timestamp"
    assert sql_type("TIMESTAMP(6)", "oracle").logical == "datetime"
    assert sql_type("NUMBER(10,2)", "oracle").precision == 10


def test_converters_are_exact() -> None:
    assert sql_type("decimal(38,10)").convert("12345678901234567890.0123456789") == Decimal(
        "12345678901234567890.0123456789"
    )
    assert sql_type("bigint unsigned").convert("18446744073709551615") == BigInt(2**64 - 1)
    with pytest.raises(ValueError):
        sql_type("int").convert("1.5")
    with pytest.raises(ValueError):
        sql_type("decimal(5,2)").convert("NaN")


def test_exact_redecode_keeps_decimal_digits() -> None:
    raw = b'{"v": 9.99999999999999909326625337248461995470488734032045693707225049331647881341, "n": 1e400}'
    convert = sql_type("decimal").convert

    seen = decode_and_parse(raw, lambda doc: (convert(doc["v"]), convert(doc["n"])))
    digits = "9.99999999999999909326625337248461995470488734032045693707225049331647881341"
    assert seen == (Decimal(digits), Decimal("1e400"))
    assert decimal_text(seen[0]).startswith("9.999999999999999093266")


def test_a_lone_surrogate_escape_is_malformed_and_a_pair_is_text() -> None:
    # The standard library reads "\ud800" into a str no encoder takes: the event used to fail in the
    # Avro encoder (an internal reject) and crash binlake normalize's JSON output.
    with pytest.raises(RejectError) as info:
        decode_and_parse(b'{"data": [{"s": "ab\\ud800c"}], "n": 1.5}', lambda doc: doc)
    assert info.value.code == "malformed"
    assert "lone UTF-16 surrogate" in info.value.reason
    with pytest.raises(RejectError):
        decode_and_parse(b'{"k\\udc00": 1}', lambda doc: doc)  # in a key too
    assert decode_and_parse(b'{"s": "\\ud83d\\ude00", "n": 1.5}', lambda doc: doc)["s"] == "\U0001f600"
    assert decode_and_parse(b'{"s": "\\\\ud800", "n": 1.5}', lambda doc: doc)["s"] == "\\ud800"  # no escape


def test_a_bit_value_wider_than_64_bits_is_refused() -> None:
    # MySQL's widest BIT is BIT(64); a wider value used to pass as a plain int that crashed
    # binlake normalize's JSON view (orjson writes no integer beyond 64 bits).
    bit = sql_type("bit(10)").convert
    assert bit("\x03\xff") == 1023
    assert bit("\xff" * 8) == 2**64 - 1
    with pytest.raises(UnreadableValue, match="at most 64 bits, got an integer of 22 digits"):
        bit("\xff" * 9)
    with pytest.raises(UnreadableValue):
        bit(2**64)
    with pytest.raises(UnreadableValue):
        sql_type("bit(8)", "oms", "base64").convert(-1)


def test_order_keys_sort_numerically() -> None:
    keys = [order_key(10, 2, 0), order_key(9, 99, 5), order_key(10, 2, 1), order_key(10, 10, 0)]
    assert sorted(keys) == [keys[1], keys[0], keys[2], keys[3]]
    with pytest.raises(RejectError):
        order_key(-1, 0, 0)
    assert binlog_index("mysql-bin.000070") == 70


@pytest.mark.parametrize(
    ("sql", "vendor", "kind"),
    [
        ("ALTER TABLE `user` ADD COLUMN `c` int", None, "ALTER_TABLE"),
        ("/* hint */ create table t (a int)", None, "CREATE_TABLE"),
        ("rename table test to t_test", "RENAME", "RENAME_TABLE"),
        ("DROP TABLE IF EXISTS `a`.`b`", "ERASE", "DROP_TABLE"),
        ("CREATE DATABASE `x`", "QUERY", "CREATE_DATABASE"),
        ("truncate table t", None, "TRUNCATE_TABLE"),
        ("GRANT ALL ON *.* TO x", "QUERY", "OTHER"),
        ("whatever", "CINDEX", "CREATE_INDEX"),
    ],
)
def test_ddl_kinds(sql: str, vendor: str | None, kind: str) -> None:
    assert ddl_kind(sql, vendor) == kind


def test_exponents_beyond_decimal_range_are_malformed_not_crashes() -> None:
    from binlake.shared.parsing.jsondoc import decode_exact

    with pytest.raises(RejectError, match="invalid JSON"):
        decode_exact(b'{"a": 1.5e99999999999999999999}')


def test_inferred_column_descriptors_are_shared_per_shape() -> None:
    from binlake.shared.event.model import Column, Columns
    from binlake.shared.parsing.rows import RowTypes

    types = RowTypes([("id", sql_type("bigint"))])
    first = types.columns_for({"id": 1, "name": "a", "n": 5})
    again = types.columns_for({"id": 2, "name": "b"}, {"id": 2, "n": 7})
    assert again is first  # one Columns per shape, so the codecs' caches apply
    assert isinstance(first, Columns)
    assert first == [
        Column("id", "bigint", "int64", None, None, False),
        Column("name", None, "string", None, None, True),
        Column("n", None, "int64", None, None, True),
    ]
    # Another value type is another shape: the inferred logical type follows the value.
    wide = types.columns_for({"id": 3, "name": None, "n": BigInt(2**64)})
    assert [(c.name, c.logical_type) for c in wide[1:]] == [("name", "unknown"), ("n", "integer")]
    assert types.columns_for({"id": 4}) is types.columns


_ZONES = [
    ZoneInfo(name)
    for name in (
        "UTC",
        "Asia/Shanghai",
        "America/New_York",
        "Australia/Lord_Howe",
        "Asia/Kathmandu",
        "America/St_Johns",
    )
] + [dt.timezone(dt.timedelta(hours=-12)), dt.timezone(dt.timedelta(hours=14, minutes=0))]


@settings(max_examples=600, deadline=None)
@given(
    local=st.datetimes(min_value=dt.datetime(1000, 1, 2), max_value=dt.datetime(9999, 12, 30)),
    zone=st.sampled_from(_ZONES),
)
def test_wall_clock_epoch_ms_is_the_aware_datetimes(local: dt.datetime, zone: dt.tzinfo) -> None:
    """The envelope readers' integer arithmetic equals the aware datetime's own: the wall clock in the
    zone (fold 0, as ``replace(tzinfo=...)``), minus the epoch, floored to milliseconds."""
    expected = (local.replace(tzinfo=zone) - temporal.EPOCH) // dt.timedelta(milliseconds=1)
    assert temporal.epoch_ms_of(local.replace(tzinfo=zone)) == expected
    assert temporal.local_text_to_ms(local.isoformat(sep=" "), zone) == expected
    compact = local.replace(microsecond=0)
    assert temporal.compact_local_to_ms(compact.strftime("%Y%m%d%H%M%S"), zone) == (
        (compact.replace(tzinfo=zone) - temporal.EPOCH) // dt.timedelta(milliseconds=1)
    )


@pytest.mark.parametrize(
    "text", ["2024131010000", "20241301100000", "20240230100000", "2024010110000٥", "00000101000000"]
)
def test_a_compact_time_that_is_no_date_time_is_unreadable(text: str) -> None:
    with pytest.raises(UnreadableValue):
        temporal.compact_local_to_ms(text, ZoneInfo("UTC"))
