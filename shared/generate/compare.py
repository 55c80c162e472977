"""Does a canonical event say what a generated change did?

Untyped vendors (CKafka, Maxwell, OMS Default...) deliver values as the text or
JSON number the vendor wrote, so an event's value may be the vendor's rendering
of the truth rather than the typed value itself: ``"1004"`` for the integer 1004,
``"2021-04-01 13:03:35.447890"`` for a DATETIME. ``equivalent`` accepts exactly
the renderings vendors use, nothing looser; ``check_event`` applies it to a whole
event and returns what differs (empty list = the event matches).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
from decimal import Decimal, InvalidOperation
from typing import Any

from binlake.shared.event.model import ChangeEvent
from binlake.shared.event.values import SqlTime, Unparsed, Value
from binlake.shared.generate.workload import Change


def _texts_of_instant(value: dt.datetime, zone: dt.tzinfo) -> set[str]:
    utc = value.astimezone(dt.UTC)
    local = value.astimezone(zone).replace(tzinfo=None)
    micros = (utc - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) // dt.timedelta(microseconds=1)
    seconds, frac = divmod(micros, 1_000_000)
    epoch = {str(seconds) + (f".{frac:06d}".rstrip("0") if frac else ""), f"{seconds}.{frac:06d}"}
    epoch.add(f"{seconds}.{frac // 1000:03d}")
    out = set(epoch)
    for base in (utc.replace(tzinfo=None), local):
        out |= _texts_of_local(base)
    out |= {t + "Z" for t in _texts_of_local(utc.replace(tzinfo=None))}
    return out


def _texts_of_local(value: dt.datetime) -> set[str]:
    out = set()
    for sep in (" ", "T"):
        text = value.isoformat(sep=sep)
        out.add(text)
        out.add(value.isoformat(sep=sep, timespec="microseconds"))
        out.add(value.isoformat(sep=sep, timespec="milliseconds"))
        if value.microsecond == 0:
            out.add(value.isoformat(sep=sep, timespec="seconds"))
        else:  # OMS prints only the significant fraction digits
            out.add(value.isoformat(sep=sep, timespec="microseconds").rstrip("0"))
    return out


def equivalent(expected: Value, actual: Any, zone: dt.tzinfo = dt.UTC) -> bool:
    """True when ``actual`` is ``expected`` or a vendor rendering of it."""
    if expected is None or actual is None:
        return expected is None and actual is None
    if type(expected) is type(actual) and expected == actual:
        if isinstance(expected, dt.datetime) and isinstance(actual, dt.datetime):
            return expected.utcoffset() == actual.utcoffset()
        return True
    if isinstance(expected, bool) or isinstance(actual, bool):
        if not isinstance(expected, int):
            return False
        return int(expected) == int(actual) if isinstance(actual, int) else str(int(expected)) == actual
    if isinstance(expected, int):
        if isinstance(actual, int | Decimal):
            return actual == expected
        if isinstance(actual, str):
            return actual.strip() == str(expected)
        return isinstance(actual, float) and abs(expected) < 2**53 and actual == float(expected)
    if isinstance(expected, Decimal):
        if isinstance(actual, str):
            try:
                actual = Decimal(actual)
            except InvalidOperation:
                return False
        return isinstance(actual, Decimal | int) and Decimal(actual) == expected
    if isinstance(expected, float):
        try:
            return float(actual) == expected
        except (TypeError, ValueError):
            return False
    if isinstance(expected, bytes):
        if not isinstance(actual, str):
            return False
        texts = {
            base64.b64encode(expected).decode(),
            expected.hex(),
            expected.hex().upper(),
            expected.decode("latin-1"),
        }
        texts.add("[" + ", ".join(str(b) for b in expected) + "]")
        return actual in texts
    if isinstance(expected, SqlTime):
        return isinstance(actual, str) and actual in {expected.isoformat(), expected.isoformat() + ".000000"}
    if isinstance(expected, dt.datetime):
        if isinstance(actual, dt.datetime):
            return False  # same type but different value or zone-ness
        if not isinstance(actual, str):
            return False
        if expected.tzinfo is None:
            return actual in _texts_of_local(expected)
        return actual in _texts_of_instant(expected, zone)
    if isinstance(expected, dt.date):
        return isinstance(actual, str) and actual == expected.isoformat()
    if isinstance(expected, str):
        if isinstance(actual, str):
            try:
                return actual == expected or json.loads(actual) == json.loads(expected)
            except ValueError:
                return False
        return False
    assert isinstance(expected, Unparsed)
    return isinstance(actual, str) and actual == expected.text


def check_event(
    change: Change,
    event: ChangeEvent,
    *,
    zone: dt.tzinfo = dt.UTC,
    partial_before: bool = False,
    partial_after: bool = False,
    upsert: bool = False,
    old_null_as_empty: bool = False,
) -> list[str]:
    """What ``event`` gets wrong about ``change`` (empty when it is right).

    ``partial_before`` / ``partial_after``: the vendor sends only some columns
    of that image (absent = unknown is then fine, wrong values never are).
    ``upsert``: the vendor cannot tell INSERT from UPDATE (debezium-smt).
    ``old_null_as_empty``: the vendor writes an old NULL as empty text
    (KafkaRiverCanal's ``origin_val``), so a prior NULL may read as ``""``/``b""``.
    """
    problems: list[str] = []
    expected_op = change.op
    if upsert and expected_op in ("INSERT", "UPDATE"):
        if event.op not in (expected_op, "UPSERT"):
            problems.append(f"op {event.op}, expected {expected_op} or UPSERT")
    elif event.op != expected_op:
        problems.append(f"op {event.op}, expected {expected_op}")
    if (event.source.database, event.source.table) != (change.database, change.table):
        problems.append(
            f"table {event.source.database}.{event.source.table}, expected {change.database}.{change.table}"
        )
    for label, want, got, partial in (
        ("before", change.before, event.before, partial_before),
        ("after", change.after, event.after, partial_after),
    ):
        if want is None or got is None:
            if want is None and got is not None and not (label == "before" and upsert):
                problems.append(f"{label} should be absent")
            if want is not None and got is None and not (label == "before" and (partial or change.op == "UPDATE")):
                problems.append(f"{label} is missing")
            continue
        for name, value in got.items():
            if name not in want:
                problems.append(f"{label}.{name} is not a column")
            elif label == "before" and old_null_as_empty and want[name] is None and value in ("", b""):
                continue
            elif not equivalent(want[name], value, zone):
                problems.append(f"{label}.{name} = {value!r}, expected {want[name]!r}")
        if not partial:
            missing = sorted(set(want) - set(got))
            if missing:
                problems.append(f"{label} lacks {missing}")
    return problems
