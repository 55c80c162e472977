"""What a lane asks Python once per type map: each column's conversion kind and its Avro descriptors.

The kinds are the kernel's conversions (``Conversion``) that the lanes
reproduce (``src/values.rs``) on a strict subset of value texts. A
column whose converter is not among them (BIT, geometry...) gets
``UNSUPPORTED``: a message with a non-null value there goes to the Python
parser. A TIMESTAMP read in a zone other than UTC is checked for its strict
form in Rust and converted by ``instant_reader`` (Python's zone rules).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Final

from binlake.shared.kernel._kernel import Conversion, encode_columns
from binlake.shared.parsing.binary import BytesEncoding
from binlake.shared.parsing.rows import RowTypes
from binlake.shared.parsing.sqltypes import Dialect, SqlType, sql_type
from binlake.shared.parsing.temporal import EPOCH, UTC
from binlake.shared.parsing.validate import column_beyond_int

UNSUPPORTED: Final = 0
INT: Final = 1
YEAR: Final = 2
DECIMAL: Final = 3
FLOAT: Final = 4
TEXT: Final = 5
BOOLEAN: Final = 6
BYTES_LATIN1: Final = 7
DATE: Final = 8
TIME: Final = 9
DATETIME: Final = 10
INSTANT_UTC: Final = 11
INSTANT_ZONED: Final = 12
"""The codes of ``KIND_CODES`` in ``src/values.rs`` (``Kind::from_code`` reads them), by the same names:
``tests/shared/kernel/test_kernel_kinds.py`` checks these constants against the extension's ``KIND_CODES``."""

_BY_CONVERSION: Final[dict[str, int]] = {
    "int": INT,
    "year": YEAR,
    "decimal": DECIMAL,
    "float": FLOAT,
    "text": TEXT,
    "json_text": TEXT,
    "boolean": BOOLEAN,
    "date": DATE,
    "time": TIME,
    "local_datetime": DATETIME,
}
"""The kernel's conversions (``Conversion.kind``) the lanes reproduce, by name."""

PlanAnswer = tuple[list[str], list[int], bytes] | None
Planner = Callable[[list[str], list[str | None]], PlanAnswer]


def kind(t: SqlType, bytes_encoding: BytesEncoding, zone: _dt.tzinfo) -> int:
    """The lane's conversion for one declared column type."""
    conversion = t.convert
    name = conversion.kind if isinstance(conversion, Conversion) else None
    found = _BY_CONVERSION.get(name) if name is not None else None
    if found is not None:
        return found
    if name == "bytes" and bytes_encoding == "latin1":
        return BYTES_LATIN1
    if name == "instant":
        return INSTANT_UTC if zone is UTC else INSTANT_ZONED
    return UNSUPPORTED


def planner(dialect: Dialect, bytes_encoding: BytesEncoding, zone: _dt.tzinfo) -> Planner:
    """plan(names, type texts) -> (declared names, kinds, Avro columns); None texts are undeclared columns."""

    def plan(names: list[str], texts: list[str | None]) -> PlanAnswer:
        types = RowTypes.from_texts(zip(names, texts, strict=True), dialect, bytes_encoding, zone)
        kinds = [kind(t, bytes_encoding, zone) for t in types.types.values()]
        if column_beyond_int(types.columns) is not None:
            return None  # the parser rejects it (check_event)
        return list(types.types), kinds, encode_columns(types.columns)

    return plan


def instant_reader(zone: _dt.tzinfo) -> Callable[[str], int | None]:
    """instant(text) -> micros since the epoch of a wall-clock TIMESTAMP in ``zone`` (None: not one).

    Exactly the Python path's reading (``sqltypes``' TIMESTAMP converter), so
    DST gaps and folds resolve the same way; the lane calls it only for texts
    of its strict ``YYYY-MM-DD HH:MM:SS[.ffffff]`` form.
    """
    convert = sql_type("timestamp", "mysql", "latin1", zone).convert

    def instant(text: str) -> int | None:
        try:
            value = convert(text)
        except ValueError:
            return None
        if not isinstance(value, _dt.datetime) or value.tzinfo is None:
            return None
        delta = value - EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds

    return instant
