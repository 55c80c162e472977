"""The Debezium lanes' planner: a row schema's conversion kinds, read by the parser's own Connect mapping.

The lanes (``src/debezium.rs``, ``src/debezium_smt.rs``) call one once per
distinct ``schema`` object (its raw bytes): ``plan`` here for debezium-json's
envelope schema (the row struct is its ``after`` field), ``services/debezium_smt/plan.py``
for debezium-smt's flattened row (the schema is the row struct, its ``__`` fields
metadata). The row types come from ``services.debezium_json.connect`` as
the Python parsers build them (``bytes_encoding`` base64, the standard
connectors' default); each column's kind names the Rust reading of that Connect
type. Field schemas the lane does not read (geometry, structs and arrays,
decimal scales beyond 40) get ``UNSUPPORTED``: a
message with a non-null value there goes to the Python parser. A schema the
parser would reject, one without a row struct or one holding fractional
numbers (which the parser's exact decoder reads differently) is declined whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import orjson

from binlake.services.debezium_json import connect

# The parser's own helpers, so that the lane reads a schema exactly as the parser does.
from binlake.services.debezium_json.envelope import has_fraction
from binlake.services.debezium_json.parser import image_schema
from binlake.shared.kernel._kernel import encode_columns
from binlake.shared.parsing.errors import RejectError
from binlake.shared.parsing.rows import RowTypes
from binlake.shared.parsing.sqltypes import SqlType
from binlake.shared.parsing.validate import column_beyond_int

UNSUPPORTED: Final = 0
INT8: Final = 1
INT16: Final = 2
INT32: Final = 3
INT64: Final = 4
FLOAT: Final = 5
BOOLEAN: Final = 6
TEXT: Final = 7
BYTES_BASE64: Final = 8
DECIMAL_BASE64: Final = 9
DATE_DAYS: Final = 10
TIME_MILLIS: Final = 11
TIME_MICROS: Final = 12
TIME_NANOS: Final = 13
TIMESTAMP_MILLIS: Final = 14
TIMESTAMP_MICROS: Final = 15
TIMESTAMP_NANOS: Final = 16
ZONED_TIMESTAMP: Final = 17
YEAR: Final = 18
BITS: Final = 19
VARIABLE_SCALE_DECIMAL: Final = 20
"""The codes of ``Kind::from_code`` in ``src/debezium.rs``."""

_BY_LOGICAL: Final = {
    "int8": INT8,
    "int16": INT16,
    "int32": INT32,
    "int64": INT64,
    "float32": FLOAT,
    "float64": FLOAT,
    "boolean": BOOLEAN,
    "string": TEXT,
    "json": TEXT,
    "enum": TEXT,
    "set": TEXT,
    "bytes": BYTES_BASE64,
    "date": DATE_DAYS,
    "timestamp": ZONED_TIMESTAMP,
    "year": YEAR,
    "bit": BITS,
}
"""Kinds fixed by the logical type alone (``connect.field_type`` gives each one converter)."""

_BY_UNIT: Final = {
    "time": {1_000: TIME_MILLIS, 1: TIME_MICROS, None: TIME_NANOS},
    "datetime": {1_000: TIMESTAMP_MILLIS, 1: TIMESTAMP_MICROS, None: TIMESTAMP_NANOS},
}
_UNITS: Final[dict[str, dict[str, int | None]]] = {
    "time": connect._TIMES,
    "datetime": connect._LOCAL_TIMESTAMPS,
}

ENCODING: Final = "base64"
_MAX_SCALE: Final = 40
"""Scales the lane renders: ``decimal_text`` writes plain notation for all of them."""

PlanAnswer = tuple[list[str], list[int], list[int], bytes] | None


def kind(t: SqlType) -> tuple[int, int]:
    """(kind, decimal scale) of one column typed by ``connect.field_type``."""
    if t.logical == "decimal":
        if t.text == connect.DECIMAL and t.scale is not None and 0 <= t.scale <= _MAX_SCALE:
            return DECIMAL_BASE64, t.scale
        if t.text == connect.VARIABLE_SCALE_DECIMAL:
            return VARIABLE_SCALE_DECIMAL, 0  # the scale comes with each value
        return UNSUPPORTED, 0  # extreme scales
    units = _UNITS.get(t.logical)
    if units is not None:
        if t.text not in units:
            return UNSUPPORTED, 0
        return _BY_UNIT[t.logical][units[t.text]], 0
    return _BY_LOGICAL.get(t.logical, UNSUPPORTED), 0


def schema_of(schema_raw: bytes) -> dict[str, Any] | None:
    """The schema object, or None: not one, or holding fractional numbers (declined whole)."""
    try:
        schema: Any = orjson.loads(schema_raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(schema, dict) or has_fraction(schema):
        return None
    return schema


def answer(types: RowTypes) -> PlanAnswer:
    if column_beyond_int(types.columns) is not None:
        return None  # the parser rejects it (check_event)
    kinds = [kind(t) for t in types.types.values()]
    return list(types.types), [k for k, _ in kinds], [s for _, s in kinds], encode_columns(types.columns)


def plan(schema_raw: bytes) -> PlanAnswer:
    """plan(envelope schema bytes) -> (column names, kinds, decimal scales, Avro columns), or None: decline."""
    schema = schema_of(schema_raw)
    row_schema = None if schema is None else image_schema(schema)
    if row_schema is None:
        return None  # no row struct: every column inferred, the Python parser's work
    try:
        types = connect.row_types(connect.struct_fields(row_schema, "schema of 'after'"), ENCODING)
    except RejectError:
        return None
    return answer(types)


def planner() -> Callable[[bytes], PlanAnswer]:
    return plan
