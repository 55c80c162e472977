"""Typed column values of the canonical change event.

A row image maps column names to Python values. Each Python type stands for one
canonical value kind (see docs/canonical-event.md):

========================  ==============================================
Python value              canonical kind
========================  ==============================================
``None``                  SQL NULL
``bool``                  boolean
``int`` (fits int64)      integer
``BigInt``                integer outside int64 (e.g. unsigned BIGINT)
``float``                 floating point
``decimal.Decimal``       exact decimal, digits kept as the vendor wrote them
``str``                   string (also JSON, ENUM, SET, intervals)
``bytes``                 binary
``datetime.date``         date
``SqlTime``               time of day or duration (MySQL TIME can be negative
                          or exceed 24 h, which ``datetime.time`` cannot hold)
naive ``datetime``        local date-time (MySQL DATETIME: no zone)
aware ``datetime`` (UTC)  instant (MySQL TIMESTAMP)
``Unparsed``              a vendor value kept verbatim because the column's
                          type cannot hold it (MySQL zero dates and the like)
========================  ==============================================

A column *absent* from an image means "unknown"; present with ``None`` means NULL.
"""

from __future__ import annotations

import datetime as _dt
from decimal import Decimal
from typing import Final

from mypy_extensions import mypyc_attr

INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1


@mypyc_attr(native_class=False)  # mypyc compiles no subclass of a builtin container or int
class BigInt(int):
    """An integer outside the int64 range.

    Kept as a subclass of ``int`` so arithmetic and comparisons work, while the
    JSON view and the Avro codec can tell it apart and render it as a decimal
    string (JSON consumers commonly lose precision above 2**53 or 2**63).
    """

    __slots__ = ()


def integer(value: int) -> int:
    """Return ``value`` as a canonical integer, wrapping it in BigInt when needed."""
    if INT64_MIN <= value <= INT64_MAX:
        return int(value)
    return BigInt(value)


def decimal_text(value: Decimal) -> str:
    """A decimal's digits as text: plain notation unless the exponent is extreme.

    ``Decimal("-0.0000000001")`` prints as ``-1E-10`` by default; plain notation
    reads better and parses everywhere. Values with hundreds of leading zeros
    (OceanBase OMS prints doubles' exact expansions) keep scientific notation.
    """
    plain = str(value)
    if "E" not in plain:
        # str() already wrote plain notation, which is exactly what f"{value:f}"
        # gives (same digits, same point): the common case, without the cost of
        # as_tuple() (a tuple of every digit) and a second formatting.
        return plain
    exponent = value.as_tuple().exponent
    if isinstance(exponent, int) and -40 <= exponent <= 40 and -40 <= value.adjusted() <= 40:
        return f"{value:f}"
    return str(value)


class SqlTime:
    """A SQL TIME value: a signed duration in microseconds.

    MySQL TIME ranges from -838:59:59 to 838:59:59, so neither
    ``datetime.time`` nor a positive-only type would be lossless.
    """

    __slots__ = ("micros",)

    def __init__(self, micros: int) -> None:
        self.micros = micros

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SqlTime) and other.micros == self.micros

    def __hash__(self) -> int:
        return hash(("SqlTime", self.micros))

    def __repr__(self) -> str:
        return f"SqlTime({self.isoformat()!r})"

    def isoformat(self) -> str:
        """``[-]HH:MM:SS[.ffffff]``; hours may exceed 23."""
        sign = "-" if self.micros < 0 else ""
        rest, frac = divmod(abs(self.micros), 1_000_000)
        rest, sec = divmod(rest, 60)
        hours, minutes = divmod(rest, 60)
        text = f"{sign}{hours:02d}:{minutes:02d}:{sec:02d}"
        if frac:
            text += f".{frac:06d}"
        return text


class Unparsed:
    """A vendor value that the column's type cannot represent, kept verbatim.

    Used only where the source database itself holds such values, such as the
    MySQL zero date ``0000-00-00`` or an invalid date that OceanBase OMS passes
    through as its original text. Never used to hide a malformed message: those
    are rejected.
    """

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unparsed) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("Unparsed", self.text))

    def __repr__(self) -> str:
        return f"Unparsed({self.text!r})"


Value = None | bool | int | float | Decimal | str | bytes | _dt.date | _dt.datetime | SqlTime | Unparsed
"""Any canonical column value (``datetime`` is listed apart from ``date`` for readers)."""

Image = dict[str, Value]
"""A row image: column name to value. Absent column = unknown."""
