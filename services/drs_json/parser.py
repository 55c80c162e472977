"""``drs-json`` and ``drs-json-c``: Huawei Cloud DRS JSON and JSON-C Kafka messages.

Both are the Canal flat shape (``services/canal_json/flat.py``) with DRS
conventions:

- Every value is a string; binary columns are a text list of byte values
  (``"[106, 103]"``, ``"[]"`` is empty bytes). ``mysqlType`` holds bare type
  words (``varchar``, ``decimal``).
- Integer words never say ``unsigned``: a MySQL ``BIGINT UNSIGNED`` column is
  ``bigint`` like a signed one. Each integer word (MySQL sources) gets the type
  that holds both readings: ``tinyint`` int16, ``smallint`` and ``mediumint``
  int32, ``int`` int64, ``bigint`` DECIMAL(20,0) (its values stay integers).
- DRS JSON puts a DELETE's row in ``old``; JSON-C puts it in ``data``.
- TIMESTAMP columns: JSON sends epoch seconds with a fraction
  (``"1624614713.201"``); JSON-C sends ``yyyy-mm-dd hh:mm:ss`` wall-clock text,
  read in the configured source time zone. Both readings are exact.
- ``type`` also takes ``INIT`` (full-synchronization rows: op SNAPSHOT) and
  ``INIT_DDL`` (full-synchronization DDL).
- Names: MySQL forbids trailing blanks in database and table names, yet the
  published sample has ``"table": "test "``; they are stripped.
- The Oracle (and PostgreSQL, GaussDB...) variant sends ``columnType`` instead
  of ``mysqlType``, ``dbType`` (``Oracle``), ``schema`` and ``opType``, with
  ``database`` blank for Oracle (JSON-C puts the schema in ``database``). It
  becomes ``db_type`` ORACLE, ``source.schema`` = the schema, and its types are
  read in the Oracle dialect (an Oracle DATE has a time of day).
- ``old`` carries the full prior row (the published sample repeats every
  column), so Canal's rule "changed = the keys of old" would name every
  column. ``changed_columns`` lists instead the columns present in both images
  whose values differ, which is exact for full images; ``before`` is ``data``
  overlaid with ``old`` (equal to ``old`` when it is full).

Order key: major = DRS ``id`` (the documented monotonically increasing event
sequence; required), minor = the input offset, then the row index inside the
message. DRS documents ``id`` as increasing per event operation, so ``id``
alone orders messages; the offset only decides between messages that share an
``id`` (as every flat message of a Canal batch shares Canal's), where a bare
row index would put row 2 of one message after row 0 of a later one. Keys of
distinct ids compare across input partitions; messages that share an ``id``
compare only within one.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final, Literal

from binlake.services.canal_json.flat import FlatProfile, parse_flat
from binlake.shared.event.model import Source
from binlake.shared.parsing.common import blank_to_none
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_FIELD, BAD_VALUE, INCONSISTENT, MISSING_FIELD, WRONG_FORMAT, RejectError
from binlake.shared.parsing.jsondoc import decode_and_parse, opt_int, opt_str
from binlake.shared.parsing.result import Parsed
from binlake.shared.parsing.sqltypes import Dialect

FORMAT_ID: Final = "drs-json"
FORMAT_ID_C: Final = "drs-json-c"
PARSER_VERSION: Final = "1"

DeleteRowIn = Literal["data", "old", "either"]

# Keys only a flat (Canal-shaped) message has; used to tell a DRS message that
# lacks its ``type`` (missing_field) from another vendor's message (wrong_format).
_FLAT_KEYS: Final = ("data", "old", "mysqlType", "columnType", "sqlType", "isDdl", "pkNames")
_DDL_TYPES: Final = frozenset({"DDL", "INIT_DDL"})
_PROFILE_CACHE: dict[tuple[str, Dialect, str | None, str], FlatProfile] = {}
_PROFILE_CACHE_LIMIT: Final = 256
_MYSQL_LIKE: Final = frozenset({"MARIADB", "TAURUS", "TAURUSDB", "GAUSSDBFORMYSQL"})
"""DRS ``dbType``s with MySQL's unsigned integers (besides any name containing MYSQL)."""
_MAX_DIGITS: Final = 4300
"""Python's own limit for integer text; no DRS number comes near it."""


def dialect_of(db_type: str | None) -> Dialect:
    """How DRS's type words read for a source: MySQL's never say UNSIGNED (the ``drs`` dialect)."""
    if db_type == "ORACLE":
        return "oracle"
    if db_type is None or "MYSQL" in db_type or db_type in _MYSQL_LIKE:
        return "drs"
    return "mysql"  # PostgreSQL, GaussDB...: no unsigned integers, the words mean what they say


def order_by_id(doc: dict[str, Any], ctx: ParseContext) -> tuple[int, int]:
    """DRS: the event sequence ``id``, then the input offset (should two messages share an id)."""
    seq = opt_int(doc, "id")
    if seq is None:
        raise RejectError(MISSING_FIELD, "required field 'id' (the DRS event sequence) is missing or null")
    return seq, ctx.offset


def parse_json(raw: bytes, ctx: ParseContext) -> Parsed:
    """``drs-json``: a DELETE's row is in ``old``."""
    return decode_and_parse(raw, lambda doc: parse_drs_doc(doc, ctx, FORMAT_ID, "old"))


def parse_json_c(raw: bytes, ctx: ParseContext) -> Parsed:
    """``drs-json-c``: a DELETE's row is in ``data``."""
    return decode_and_parse(raw, lambda doc: parse_drs_doc(doc, ctx, FORMAT_ID_C, "data"))


def parse_drs_doc(doc: Any, ctx: ParseContext, format_id: str, delete_row_in: DeleteRowIn) -> Parsed:
    """Canonical events from one decoded DRS flat message (also used by drs-avro).

    ``delete_row_in="either"`` takes a DELETE's row from ``old`` when ``data`` is
    empty, else from ``data``.
    """
    if not isinstance(doc, dict):
        raise RejectError(WRONG_FORMAT, "expected a JSON object (a DRS JSON message)")
    _refuse_huge_numbers(doc)
    kind = _kind(doc)
    if isinstance(doc.get("data"), dict):
        raise RejectError(WRONG_FORMAT, "field 'data' is an object, not an array of rows: not a DRS JSON message")
    is_ddl = doc.get("isDdl")
    if is_ddl is not None and not isinstance(is_ddl, bool):
        raise RejectError(BAD_FIELD, "field 'isDdl' must be a boolean")
    db_type = blank_to_none((opt_str(doc, "dbType") or "").strip().upper()) or "MYSQL"
    dialect = dialect_of(db_type)
    flat = dict(doc)
    flat["type"] = kind
    if kind.upper() in _DDL_TYPES:
        if is_ddl is False:
            raise RejectError(INCONSISTENT, f"type {kind!r} is a DDL but 'isDdl' is false")
        flat["isDdl"] = True
    if doc.get("mysqlType") is None and doc.get("columnType") is not None:
        flat["mysqlType"] = doc["columnType"]
    where = delete_row_in
    if where == "either":
        where = "data" if doc.get("data") else "old"
    parsed = parse_flat(flat, ctx, _profile(format_id, dialect, db_type, where))
    if parsed.events and dialect == "oracle":
        _oracle_source(parsed, doc)
    if kind.upper() == "UPDATE":
        _changed_columns(parsed, doc)
    return parsed


def _refuse_huge_numbers(doc: dict[str, Any]) -> None:
    """Reject numbers such as ``1e999999999`` before anything converts them to int.

    The exact decoder reads them as Decimal, and ``int()`` of such a Decimal
    (in the shared integer readers) takes practically forever. DRS writes
    every value as a string, so a number this large is never a real value.
    """
    for key, value in doc.items():
        if type(value) is not str and isinstance(value, Decimal) and _huge(value):  # str: most values, at once
            raise RejectError(BAD_FIELD, f"field {key!r} is a number beyond {_MAX_DIGITS} digits")
    for key in ("data", "old"):
        rows = doc.get(key)
        if not isinstance(rows, list):
            continue
        for index, row in enumerate(rows):
            if not isinstance(row, dict):
                continue
            for name, value in row.items():
                if type(value) is not str and isinstance(value, Decimal) and _huge(value):
                    where = f"{key}[{index}] column {name!r}"
                    raise RejectError(BAD_VALUE, f"{where} is a number beyond {_MAX_DIGITS} digits")


def _huge(value: Decimal) -> bool:
    return value.is_finite() and value.adjusted() > _MAX_DIGITS


def _kind(doc: dict[str, Any]) -> str:
    """``type``, or the Oracle variant's ``opType``; they must agree when both are sent."""
    kind = doc.get("type")
    op_type = doc.get("opType")
    if kind is None and op_type is None:
        if any(key in doc for key in _FLAT_KEYS):
            raise RejectError(MISSING_FIELD, "required field 'type' (or 'opType') is missing or null")
        raise RejectError(WRONG_FORMAT, "no 'type', 'data' or 'mysqlType' field: not a DRS JSON message")
    for key, value in (("type", kind), ("opType", op_type)):
        if value is not None and not isinstance(value, str):
            raise RejectError(BAD_FIELD, f"field {key!r} must be a string")
    if isinstance(kind, str) and isinstance(op_type, str) and kind.upper() != op_type.upper():
        raise RejectError(INCONSISTENT, f"'type' {kind!r} and 'opType' {op_type!r} disagree")
    chosen = kind if isinstance(kind, str) else op_type
    assert isinstance(chosen, str)
    return chosen


def _profile(format_id: str, dialect: Dialect, db_type: str | None, where: Literal["data", "old"]) -> FlatProfile:
    key = (format_id, dialect, db_type, where)
    profile = _PROFILE_CACHE.get(key)
    if profile is None:
        if len(_PROFILE_CACHE) >= _PROFILE_CACHE_LIMIT:
            _PROFILE_CACHE.clear()
        profile = FlatProfile(format_id, dialect, "list", where, order_by_id, db_type, strip_names=True)
        _PROFILE_CACHE[key] = profile
    return profile


def _oracle_source(parsed: Parsed, doc: dict[str, Any]) -> None:
    """Oracle has schemas, not databases: DRS sends ``schema`` (JSON-C: in ``database``)."""
    first = parsed.events[0].source
    schema = blank_to_none((opt_str(doc, "schema") or "").rstrip())
    database = first.database
    if schema is None:
        schema, database = database, None
    elif database == schema:
        database = None
    source = Source(
        format=first.format,
        db_type=first.db_type,
        database=database,
        schema=schema,
        table=first.table,
        gtid=first.gtid,
        sequence=first.sequence,
    )
    for event in parsed.events:
        event.source = source


def _changed_columns(parsed: Parsed, doc: dict[str, Any]) -> None:
    """Columns whose old and new values differ (DRS's ``old`` is a full image)."""
    rows = doc.get("data")
    olds = doc.get("old")
    if not isinstance(rows, list) or not isinstance(olds, list):
        return
    for index, event in enumerate(parsed.events):
        if event.changed_columns is None or index >= len(olds):
            continue
        new, old = rows[index], olds[index]
        if isinstance(new, dict) and isinstance(old, dict):
            event.changed_columns = [name for name, value in old.items() if name in new and new[name] != value]
