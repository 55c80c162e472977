"""The kernel's typed values (``shared/kernel/src/conversion.rs``) and type reading (``sqltype.rs``): each
conversion's values, its refusals (worded without the value) and the type words of every dialect."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from binlake.shared.event.values import BigInt, SqlTime, Unparsed
from binlake.shared.kernel._kernel import Conversion, describe, jdbc_type_name, sql_type
from binlake.shared.parsing.errors import UnreadableValue
from binlake.shared.parsing.jsondoc import InexactNumber

pytestmark = pytest.mark.unit
UTC = dt.UTC
SHANGHAI = ZoneInfo("Asia/Shanghai")
NEW_YORK = ZoneInfo("America/New_York")


def _same(found: Any, expected: Any) -> bool:
    return type(found) is type(expected) and found == expected


@pytest.mark.parametrize(
    ("kind", "raw", "expected"),
    [
        ("int", "123", 123),
        ("int", " -42 ", -42),
        ("int", "+7", 7),
        ("int", "٣", 3),  # int() reads every Unicode decimal digit
        ("int", "18446744073709551615", BigInt(2**64 - 1)),
        ("int", 2**70, BigInt(2**70)),
        ("int", True, 1),
        ("int", 2.0, 2),
        ("int", Decimal("1E+3"), 1000),
        ("year", "2024", 2024),
        ("decimal", " 1.50 ", Decimal("1.50")),
        ("decimal", 7, Decimal(7)),
        ("float", "1e5", 100000.0),
        ("float", "-0.5", -0.5),
        ("float", 3, 3.0),
        ("text", "x", "x"),
        ("text", False, "false"),
        ("text", Decimal("1.10"), "1.10"),
        (
            "json_text",
            {"a": [1, None, True], "b": Decimal("1.10"), "c": 10**30},
            '{"a":[1,null,true],"b":1.10,"c":' + str(10**30) + "}",
        ),
        ("boolean", " TRUE ", True),
        ("boolean", 0, False),
        ("date", "2020-02-29", dt.date(2020, 2, 29)),
        ("date", "0000-00-00", Unparsed("0000-00-00")),
        ("date", "2020-01-00", Unparsed("2020-01-00")),
        ("oracle_date", "2020-01-02", dt.datetime(2020, 1, 2)),
        ("time", "-838:59:59.000001", SqlTime(-3_020_399_000_001)),
        ("time", "10:11:12.123456789", SqlTime(36_672_123_456)),
        ("local_datetime", "2020-01-01 10:11:12.1234567", dt.datetime(2020, 1, 1, 10, 11, 12, 123456)),
        ("local_datetime", "2020-01-01T10:11:12.5", dt.datetime(2020, 1, 1, 10, 11, 12, 500000)),
        ("local_datetime", "0000-00-00 00:00:00", Unparsed("0000-00-00 00:00:00")),
        ("instant", "2020-01-01 10:11:12", dt.datetime(2020, 1, 1, 10, 11, 12, tzinfo=UTC)),
        ("instant", "2020-01-01T10:11:12.123Z", dt.datetime(2020, 1, 1, 10, 11, 12, 123000, tzinfo=UTC)),
        ("instant", "2020-01-01 10:11:12+08:00", dt.datetime(2020, 1, 1, 2, 11, 12, tzinfo=UTC)),
        ("instant", "1606233662.012345", dt.datetime(2020, 11, 24, 16, 1, 2, 12345, tzinfo=UTC)),
        ("instant", "-1.0000001", dt.datetime(1969, 12, 31, 23, 59, 58, 999999, tzinfo=UTC)),
        ("instant", 1606233662, dt.datetime(2020, 11, 24, 16, 1, 2, tzinfo=UTC)),
        ("instant", "2020-11-25 00:01:02.5 Asia/Shanghai", dt.datetime(2020, 11, 24, 16, 1, 2, 500000, tzinfo=UTC)),
        ("instant", "0000-00-00 00:00:00", Unparsed("0000-00-00 00:00:00")),
        ("geometry", "POINT(1 2)", "POINT(1 2)"),
        ("infer", "x", "x"),
        ("infer", 2**64, BigInt(2**64)),
        ("infer", [1, "a"], '[1,"a"]'),
    ],
)
def test_values(kind: str, raw: Any, expected: Any) -> None:
    assert _same(Conversion(kind)(raw), expected)


@pytest.mark.parametrize(
    ("zone", "wall", "utc"),
    [
        (SHANGHAI, "2020-01-01 08:00:00", dt.datetime(2020, 1, 1, tzinfo=UTC)),
        # A wall clock in a gap (spring forward) and in a fold (fall back) takes the earlier offset.
        (NEW_YORK, "2020-03-08 02:30:00", dt.datetime(2020, 3, 8, 7, 30, tzinfo=UTC)),
        (NEW_YORK, "2020-11-01 01:30:00", dt.datetime(2020, 11, 1, 5, 30, tzinfo=UTC)),
    ],
)
def test_instants_read_in_the_source_zone(zone: dt.tzinfo, wall: str, utc: dt.datetime) -> None:
    assert _same(Conversion("instant", zone=zone)(wall), utc)


@pytest.mark.parametrize(
    ("kind", "encoding", "raw", "expected"),
    [
        ("bytes", "latin1", "\x00ÿ", b"\x00\xff"),
        ("bytes", "base64", "AAE=", b"\x00\x01"),
        ("bytes", "hex", "0aFF", b"\x0a\xff"),
        ("bytes", "list", " [1, -1, 255] ", b"\x01\xff\xff"),
        ("bytes", "list", "[]", b""),
        ("bytes", "base64", [1, 2], b"\x01\x02"),
        ("bit", "latin1", "5", 5),
        ("bit", "base64", "AQI=", 258),
        ("bit", "hex", 2**64 - 1, BigInt(2**64 - 1)),  # beyond int64: a BigInteger, as any wider integer
        ("bit", "latin1", "9223372036854775807", 2**63 - 1),
    ],
)
def test_binary_values(kind: str, encoding: str, raw: Any, expected: Any) -> None:
    assert _same(Conversion(kind, encoding)(raw), expected)


@pytest.mark.parametrize(
    ("kind", "encoding", "raw", "reason"),
    [
        ("int", None, "1_000", "expected an integer, got a string of 5 characters"),
        ("int", None, "abc", "expected an integer, got a string of 3 characters"),
        ("int", None, "²", "expected an integer, got a string of 1 character"),
        ("int", None, [1], "expected an integer, got an array of 1 item"),
        ("year", None, "10000", "expected a year 0..9999, got an integer of 5 digits"),
        ("int32", None, "3000000000", "expected an integer of -2147483648..2147483647, got an integer of 10 digits"),
        ("uint64", None, "-1", "expected an integer of 0..18446744073709551615, got a negative integer of 1 digit"),
        ("int8", None, 128, "expected an integer of -128..127, got an integer of 3 digits"),
        ("int64_or_uint64", None, "18446744073709551616", "got an integer of 20 digits"),
        ("decimal", None, "NaN", "a SQL decimal cannot be NaN or infinite"),
        ("decimal", None, True, "expected a decimal number, got a boolean"),
        ("float", None, "x1", "expected a floating-point number, got a string of 2 characters"),
        ("float", None, 10**400, "a floating-point number cannot hold an integer of 401 digits"),
        ("boolean", None, 2, "expected a boolean (true/false/1/0), got an integer of 1 digit"),
        ("date", None, "2020-02-30", "expected a date YYYY-MM-DD, got a string of 10 characters"),
        ("time", None, "10:60:00", "with minutes and seconds below 60, got a string of 8 characters"),
        ("time", None, "1:2:3", "expected a time [-]HH:MM:SS[.ffffff], got a string of 5 characters"),
        ("local_datetime", None, "2020-01-01 10:11:12+08:00", "without zone, got one with a zone offset"),
        ("instant", None, "2020-11-25 00:01:02 Nowhere/Zone", "followed by an IANA zone name"),
        ("instant", None, "99999999999999999999999", "expected epoch seconds within years 1-9999"),
        ("instant", None, "253402300800", "expected microseconds since the epoch within years 1-9999"),
        ("instant", None, True, "expected a timestamp, got a boolean"),
        ("bytes", "latin1", "aĀ", "above U+00FF at position 1 of a string of 2 characters"),
        ("bytes", "base64", "A", "invalid base64: "),
        ("bytes", "base64", "é", "a non-ASCII character at position 0"),
        ("bytes", "hex", "zz", "invalid hex (base16) text: a string of 2 characters"),
        ("bytes", "list", "[1,,2]", "byte list item 1 is not an integer: an empty string"),
        ("bytes", "list", "[256]", "byte list item 0 is outside -128..255: a string of 3 characters"),
        ("bytes", "list", "1, 2", "expected a byte list such as [106, 103], got a string of 4 characters"),
        ("bit", "hex", 2**64, "expected a BIT value of at most 64 bits, got an integer of 20 digits"),
        ("geometry", None, 1, "expected a geometry as text, got an integer of 1 digit"),
        ("infer", None, Decimal("Infinity"), "a SQL value cannot be NaN or infinite"),
    ],
)
def test_refusals_describe_the_value_without_quoting_it(kind: str, encoding: str | None, raw: Any, reason: str) -> None:
    with pytest.raises(UnreadableValue) as raised:
        Conversion(kind, encoding)(raw)
    assert reason in str(raised.value)


@pytest.mark.parametrize("kind", ["int", "decimal", "text", "json_text", "instant", "infer"])
def test_a_fast_decoded_float_asks_for_the_exact_decode(kind: str) -> None:
    raw: Any = [1.5] if kind == "json_text" else 1.5
    with pytest.raises(InexactNumber):
        Conversion(kind)(raw)


def test_a_json_value_nests_at_most_as_deep_as_orjson_writes() -> None:
    deep: Any = 0
    for _ in range(254):
        deep = [deep]
    assert Conversion("json_text")(deep) == "[" * 254 + "0" + "]" * 254
    with pytest.raises(TypeError, match="Recursion limit"):
        Conversion("json_text")([deep])


@pytest.mark.parametrize(
    ("text", "dialect", "expected"),
    [
        ("bigint(20) unsigned", "mysql", ("uint64", None, None, "uint64")),
        ("BIGINT", "oms", ("integer", None, None, "int")),
        ("bigint", "drs", ("decimal", 20, 0, "int64_or_uint64")),
        ("int", "drs", ("int64", None, None, "int64")),
        ("int(10) zerofill", "mysql", ("int64", None, None, "int64")),
        ("decimal(10)", "mysql", ("decimal", 10, 0, "decimal")),
        ("number", "oracle", ("decimal", None, None, "decimal")),
        ("float(25)", "mysql", ("float64", None, None, "float")),
        ("float(10)", "oracle", ("decimal", None, None, "decimal")),
        ("date", "oracle", ("datetime", None, None, "oracle_date")),
        ("timestamp(6)", "oracle", ("datetime", 6, None, "local_datetime")),
        ("timestamp(6) with local time zone", "oracle", ("timestamp", 6, None, "instant")),
        ("datetime(3)", "mysql", ("datetime", 3, None, "local_datetime")),
        ("bit(8)", "mysql", ("bit", 8, None, "bit")),
        ("varchar2(20)", "oracle", ("string", None, None, "text")),
        ("longblob", "mysql", ("bytes", None, None, "bytes")),
        ("json", "mysql", ("json", None, None, "json_text")),
        ("geomcollection", "mysql", ("geometry", None, None, "geometry")),
        ("decimal(²)", "mysql", ("decimal", None, None, "decimal")),  # digits are ASCII
        ("no such type", "mysql", ("unknown", None, None, "infer")),
        (None, "mysql", ("unknown", None, None, "infer")),
    ],
)
def test_type_words(text: str | None, dialect: str, expected: tuple[Any, ...]) -> None:
    assert sql_type(text, dialect, "latin1") == expected


def test_jdbc_codes_and_descriptions() -> None:
    assert jdbc_type_name(93) == "datetime"
    assert jdbc_type_name(12345) is None
    assert describe("abc") == "a string of 3 characters"
    assert describe(-(10**5000)) == "a negative integer of 5001 digits"
    assert describe(Decimal("1.50")) == "a decimal number of 3 digits"
    assert describe({}) == "an object of 0 fields"


_ITEM_SPELLINGS = st.one_of(
    st.integers(-300, 300).map(str),
    st.integers(-300, 300).map(lambda n: f"+{n}" if n >= 0 else str(n)),
    st.integers(0, 300).map(lambda n: f"{n:04d}"),
    st.integers(-300, 300).map(lambda n: f" {n}\t"),
    st.sampled_from(["", "-", "1_0", "\u0665", "0x1", "1.0", "a"]),
)


def _by_int(items: list[str]) -> bytes | None:
    """The byte list rule spelled out: each item read by ``int()``, in -128..255."""
    out = bytearray()
    for item in items:
        try:
            number = int(item)
        except ValueError:
            return None
        if not -128 <= number <= 255:
            return None
        out.append(number & 0xFF)
    return bytes(out)


@settings(max_examples=500, deadline=None)
@given(items=st.lists(_ITEM_SPELLINGS, min_size=1, max_size=12))
def test_a_byte_list_reads_each_item_as_int_does(items: list[str]) -> None:
    """Plain items are read without a Python ``int()`` each (the common case); any other spelling goes
    through ``int()``: the bytes are the same either way."""
    expected = b"" if not ",".join(items).strip() else _by_int(items)  # "[]", "[ ]": no items
    convert = Conversion("bytes", "list")
    if expected is None:
        with pytest.raises(UnreadableValue):
            convert("[" + ",".join(items) + "]")
    else:
        assert convert("[" + ",".join(items) + "]") == expected
