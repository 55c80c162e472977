"""Does a mirror table equal the ground truth? Row for row, column for column, read without Spark.

The mirror is read with DuckDB (``spark_sink.lake.native``); the truth is the
workload's final state (typed values: ``shared.event.values``). A logical
column the sink split into fallback columns (``binlake.fallbacks``) is read
back from whichever of its physical columns holds the row's value. Values are
compared as the lake types them: unsigned BIGINT in ``DECIMAL(20,0)``, DECIMAL
exactly, DATETIME as a local date-time, TIMESTAMP as an instant, TIME as
microseconds, JSON as the document it is (a vendor may re-space it), BLOB as
bytes; where a vendor gives no types (CKafka, OMS Default), the mirror holds
its texts, read back as the value they spell (a TIMESTAMP as OMS's epoch
seconds, too). Columns added by the traffic's ``ADD COLUMN`` must exist and be NULL.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

from binlake.shared.event.values import Image, SqlTime
from binlake.spark_sink.lake.entries import fallbacks, primary_key
from binlake.spark_sink.lake.native import LakeReader
from binlake.spark_sink.layout import HIDDEN

UTC = dt.UTC


@dataclass(slots=True)
class TableCheck:
    table: str
    mirror_rows: int | None
    """None: the lake has no mirror for the table."""
    truth_rows: int
    differences: list[str] = field(default_factory=list)
    """The first few differences, one sentence each."""

    @property
    def equal(self) -> bool:
        return self.mirror_rows is not None and not self.differences


MAX_DIFFERENCES = 3


def check_table(
    lake: LakeReader, mirror: str | Path | None, table: str, truth: dict[int, Image], added: list[str]
) -> TableCheck:
    if mirror is None:
        result = TableCheck(table, None, len(truth))
        if truth:
            result.differences.append("no mirror table in the lake")
        return result
    names, rows = lake.rows(mirror)
    props = lake.properties(mirror)
    result = TableCheck(table, len(rows), len(truth))
    key = primary_key(props)
    if key != ["id"]:
        result.differences.append(f"mirror key is {key or 'none (append-only)'}, the source's is ['id']")
        return result
    physical: dict[str, list[int]] = {}
    routes = fallbacks(props)
    for index, name in enumerate(names):
        if name not in HIDDEN:
            physical.setdefault(routes.get(name, name), []).append(index)
    for column in added:
        if column not in physical:
            result.differences.append(f"column {column} (ADD COLUMN) is missing")
    seen: set[int] = set()
    for row in rows:
        values = {column: _first(row, indexes) for column, indexes in physical.items()}
        ident = values.get("id")
        if ident is None:
            _note(result, "a row with no id")
            continue
        row_key = int(ident)
        seen.add(row_key)
        expected = truth.get(row_key)
        if expected is None:
            _note(result, f"row id={row_key} is not in the source table")
            continue
        for column, value in expected.items():
            if column not in values:
                _note(result, f"column {column} is missing")
            elif not same(value, values[column]):
                _note(result, f"row id={row_key} {column}: expected {_show(value)}, found {_show(values[column])}")
        for column in added:
            if values.get(column) is not None:
                _note(result, f"row id={row_key} {column}: expected NULL, found {_show(values[column])}")
    missing = sorted(set(truth) - seen)
    if missing:
        _note(result, f"{len(missing)} source rows missing, e.g. id={missing[0]}")
    return result


def _first(row: tuple[Any, ...], indexes: list[int]) -> Any:
    for index in indexes:
        if row[index] is not None:
            return row[index]
    return None


def _note(result: TableCheck, text: str) -> None:
    if len(result.differences) < MAX_DIFFERENCES and text not in result.differences:
        result.differences.append(text)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _naive_utc(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)


def same(expected: Any, found: Any) -> bool:
    """True when the lake's value ``found`` is the source value ``expected``."""
    if expected is None or found is None:
        return expected is None and found is None
    if isinstance(expected, bool) or isinstance(found, bool):
        return _number(found) == int(expected)
    if isinstance(expected, int | Decimal):
        number = _number(found)
        return number is not None and number == expected
    if isinstance(expected, float):
        number = _number(found)
        return number is not None and float(number) == expected
    if isinstance(expected, SqlTime):
        if isinstance(found, int):
            return found == expected.micros
        return str(found) == expected.isoformat()
    if isinstance(expected, dt.datetime):
        if isinstance(found, str) and expected.tzinfo is not None and _number(found) is not None:
            # An untyped vendor's TIMESTAMP as epoch seconds (OMS Default, SharePlex): the same instant?
            micros = (expected - dt.datetime(1970, 1, 1, tzinfo=UTC)) // dt.timedelta(microseconds=1)
            return _number(found) == Decimal(micros).scaleb(-6)
        if isinstance(found, str):  # a vendor that gives no types (CKafka): its text, read in the source zone (UTC)
            found = _parse(dt.datetime.fromisoformat, found)
        return isinstance(found, dt.datetime) and _naive_utc(found) == _naive_utc(expected)
    if isinstance(expected, dt.date):
        if isinstance(found, str):
            found = _parse(dt.date.fromisoformat, found)
        return isinstance(found, dt.date) and not isinstance(found, dt.datetime) and found == expected
    if isinstance(expected, bytes):
        if isinstance(found, bytes | bytearray | memoryview):
            return bytes(found) == expected
        return str(found) == base64.b64encode(expected).decode("ascii")
    if isinstance(expected, str):
        return str(found) == expected or _same_json(expected, str(found))
    return bool(found == expected)


def _parse(reader: Any, text: str) -> Any:
    try:
        return reader(text)
    except ValueError:
        return None


def _number(value: Any) -> Decimal | None:
    if isinstance(value, bool):
        return Decimal(int(value))
    if isinstance(value, int | Decimal):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    try:
        return Decimal(str(value))
    except InvalidOperation:
        return None


def _same_json(a: str, b: str) -> bool:
    try:
        return bool(json.loads(a, parse_float=Decimal) == json.loads(b, parse_float=Decimal))
    except ValueError:
        return False
