"""Source column types: from the vendor's type text to a logical type and a conversion.

``sql_type(text, dialect=..., bytes_encoding=..., zone=...)`` reads a type such as
``decimal(10,4)``, ``bigint(20) unsigned``, ``VARCHAR2(20)`` or OMS's ``INT64``
and returns a cached ``SqlType``: the logical type, precision and scale, and a
``convert`` callable that turns the vendor's value (a string for Canal and DRS,
a number for OMS...) into a canonical value, raising ``UnreadableValue`` (a
ValueError) when it cannot. Conversion never guesses: a value that does not read
as its type is an error the parser turns into a reject, worded without the value.

The rules live in the native kernel, once: the type reading in
``shared/kernel/src/sqltype.rs``, the conversions (``Conversion``) in
``shared/kernel/src/conversion.rs``; docs/formats.md describes them for users.
Dialects differ in what the same word means: OceanBase OMS uses ``BIGINT`` for
integers beyond int64 (its ``INT64`` is the signed 64-bit type), Oracle's
``DATE`` carries a time of day, and Huawei DRS writes MySQL's integer types
without their ``UNSIGNED`` (``bigint`` for both), so in the ``drs`` dialect an
integer word gets the type that holds both readings: ``int`` is int64, ``bigint``
is DECIMAL(20,0).
"""

from __future__ import annotations

import datetime as _dt
import functools
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, Literal

from binlake.shared.event.values import BigInt, Value
from binlake.shared.kernel._kernel import Conversion, bit_value, jdbc_type_name
from binlake.shared.kernel._kernel import sql_type as _read_type
from binlake.shared.parsing.binary import BytesEncoding
from binlake.shared.parsing.temporal import UTC

Dialect = Literal["mysql", "drs", "oms", "oracle"]
"""How to read type words: ``drs`` is MySQL as Huawei DRS names it, bare words that never say UNSIGNED."""
Converter = Callable[[Any], Value]

BIT_MAX: Final = 2**64 - 1
"""The largest value of MySQL's widest BIT, BIT(64)."""

__all__ = ["BIT_MAX", "Converter", "Dialect", "SqlType", "bit_value", "infer", "jdbc_type_name", "sql_type", "text"]


@dataclass(slots=True, frozen=True)
class SqlType:
    text: str | None
    logical: str
    precision: int | None
    scale: int | None
    convert: Converter


def conversion(kind: str, bytes_encoding: BytesEncoding | None = None, zone: _dt.tzinfo = UTC) -> Conversion:
    """The kernel's conversion ``kind``: one object per kind and the setting it reads (the text encoding of
    ``bytes`` and ``bit``, the zone of ``instant``), so parsers may compare conversions by identity."""
    if kind in ("bytes", "bit"):
        return _conversion(kind, bytes_encoding, UTC)
    return _conversion(kind, None, zone if kind == "instant" else UTC)


@functools.lru_cache(maxsize=4096)
def _conversion(kind: str, bytes_encoding: BytesEncoding | None, zone: _dt.tzinfo) -> Conversion:
    return Conversion(kind, bytes_encoding, zone)


text: Final = conversion("text")
"""The conversion of text columns (string, enum, set, interval)."""
infer: Final = conversion("infer")
"""The conversion of an untyped column: the JSON value decides (see ``inferred_logical``)."""


@functools.lru_cache(maxsize=4096)
def sql_type(
    text: str | None,
    dialect: Dialect = "mysql",
    bytes_encoding: BytesEncoding = "latin1",
    zone: _dt.tzinfo = UTC,
) -> SqlType:
    """The logical type and conversion for a vendor's column type text (cached)."""
    logical, precision, scale, kind = _read_type(text, dialect, bytes_encoding)
    return SqlType(text, logical, precision, scale, conversion(kind, bytes_encoding, zone))


def inferred_logical(value: Value) -> str:
    """The logical type an untyped column gets from its (converted) value."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, BigInt):
        return "integer"
    if isinstance(value, int):
        return "int64"
    if isinstance(value, Decimal):
        return "decimal"
    return "string"
