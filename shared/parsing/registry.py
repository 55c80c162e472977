"""Format ids to their ``FormatSpec``, imported only when first used.

A format is one folder of Python (docs/development.md, "Adding a vendor format"):

- ``parser.py``: ``FORMAT_ID``, ``PARSER_VERSION`` and
  ``def parse(raw: bytes, ctx: ParseContext) -> Parsed`` (pure: no I/O; raise
  ``RejectError`` for anything it cannot normalize);
- ``options.py`` if it reads options: ``class Options(FormatOptions)``;
- ``spec.py``: ``SPEC = FormatSpec(FORMAT_ID, PARSER_VERSION, parse, options=...)``.

binlake's own formats live in ``services/<name>/`` and have a line in ``FORMATS``
below, with their golden cases under ``tests/corpus/``. A format kept outside
binlake is named the same way, ``"module:attribute"`` of its spec, by ``register``:
``BINLAKE_FORMAT_SPECS`` (``binlake normalizer``) and ``--format-spec`` (``binlake
normalize``) call it. Nothing else changes: the offline CLI, the Kafka runtime, the
codecs and ``auto`` detection all reach formats through this registry.
"""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass
from functools import cache
from typing import Final

from binlake.shared.errors import ConfigError
from binlake.shared.lazy import load
from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import INTERNAL, RejectError
from binlake.shared.parsing.result import ParseOutcome, Rejected
from binlake.shared.parsing.spec import FormatSpec, ParseFn
from binlake.shared.parsing.validate import check_event

FORMATS: Final[dict[str, str]] = {
    "canal-json": "binlake.services.canal_json.spec:SPEC",
    "kafkariver-canal": "binlake.services.kafkariver_canal.spec:SPEC",
    "ckafka-v1": "binlake.services.ckafka_v1.spec:SPEC",
    "drs-json": "binlake.services.drs_json.spec:SPEC_JSON",
    "drs-json-c": "binlake.services.drs_json.spec:SPEC_JSON_C",
    "drs-avro": "binlake.services.drs_avro.spec:SPEC",
    "oms-default": "binlake.services.oms_default.spec:SPEC_DEFAULT",
    "oms-extend-column-type": "binlake.services.oms_default.spec:SPEC_EXTEND_COLUMN_TYPE",
    "oms-dataworks": "binlake.services.oms_dataworks.spec:SPEC",
    "oms-shareplex": "binlake.services.oms_shareplex.spec:SPEC",
    "debezium-json": "binlake.services.debezium_json.spec:SPEC",
    "debezium-smt": "binlake.services.debezium_smt.spec:SPEC",
    "oms-avro": "binlake.services.oms_avro.spec:SPEC",
    "maxwell-json": "binlake.services.maxwell_json.spec:SPEC",
    "ogg-json": "binlake.services.ogg_json.spec:SPEC",
    "auto": "binlake.services.auto.spec:SPEC",
}
"""Format id -> ``module:attribute`` of its ``FormatSpec``: the formats built into binlake."""

_REGISTERED: Final[dict[str, str]] = {}
"""Format id -> ``module:attribute`` of the formats ``register`` added (kept outside binlake)."""
_FORMAT_ID: Final = re.compile(r"[A-Za-z0-9][\w.-]*", re.ASCII)
_TARGET: Final = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", re.ASCII)


def register(format_id: str, target: str) -> None:
    """Make a format that is not built into binlake known by its id, for this process.

    ``target`` is ``"module:attribute"`` of the format's ``FormatSpec`` (``"acme.cdc.spec:SPEC"``), imported
    on first use, as the built-in ones are; the spec's ``format_id`` must be ``format_id``. Registering an id
    again with the same target does nothing. Raises ``ConfigError`` for a malformed id or target, the id of a
    built-in format, or an id already registered to another target.
    """
    if _FORMAT_ID.fullmatch(format_id) is None:
        raise ConfigError(f"format id {format_id!r}: expected letters, digits, '-', '_' and '.' (e.g. 'acme-cdc')")
    if _TARGET.fullmatch(target) is None:
        raise ConfigError(f"format {format_id}: {target!r} is not 'module:attribute' (e.g. 'acme.cdc.spec:SPEC')")
    if format_id in FORMATS:
        raise ConfigError(f"format {format_id} is built into binlake: choose another id for a format of your own")
    known = _REGISTERED.setdefault(format_id, target)
    if known != target:
        raise ConfigError(f"format {format_id} is already registered as {known!r}, not {target!r}")


@dataclass(slots=True, frozen=True)
class Parser:
    format_id: str
    version: str
    parse: ParseFn

    def __call__(self, raw: bytes, ctx: ParseContext) -> ParseOutcome:
        """Parse one message; never raises, whatever the bytes."""
        return run(self.parse, raw, ctx)


def run(parse: ParseFn, raw: bytes, ctx: ParseContext) -> ParseOutcome:
    try:
        outcome = parse(raw, ctx)
        for event in outcome.events:
            check_event(event)
        return outcome
    except RejectError as exc:
        return Rejected(exc.code, exc.reason)
    except RecursionError:
        return Rejected("malformed", "message nests too deeply to parse")
    except Exception as exc:  # noqa: BLE001 - the boundary: a parser bug must not stop the stream
        return Rejected(INTERNAL, f"parser error {type(exc).__name__} at {_where(exc)}")


def _where(exc: BaseException) -> str:
    """Where a parser bug was raised (file:line in function), the innermost frame in binlake's code.

    The exception's message is left out: it may quote the message's values (``KeyError('jane@...')``),
    and reasons carry no row data; the place is what finds the bug.
    """
    frames = traceback.extract_tb(exc.__traceback__)[1:]  # [0] is run() itself
    ours = [frame for frame in frames if "/services/" in frame.filename or "/shared/" in frame.filename]
    if not (ours or frames):
        return "an unknown place"
    frame = (ours or frames)[-1]
    parts = frame.filename.replace("\\", "/").split("/")
    return f"{'/'.join(parts[-2:])}:{frame.lineno} in {frame.name}"


@cache
def spec(format_id: str) -> FormatSpec:
    """The spec of a format id; raises ConfigError naming the known ids."""
    target = FORMATS.get(format_id)
    if target is not None:
        found: FormatSpec = load(target)
        assert found.format_id == format_id, (format_id, found.format_id)
        return found
    target = _REGISTERED.get(format_id)
    if target is None:
        known = ", ".join(sorted(FORMATS.keys() | _REGISTERED.keys()))
        raise ConfigError(
            f"unknown format {format_id!r}; known formats: {known} "
            "(a format of your own: BINLAKE_FORMAT_SPECS, docs/development.md)"
        )
    try:
        loaded = load(target)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"format {format_id}: cannot import {target!r} ({type(exc).__name__}: {exc})") from exc
    if not isinstance(loaded, FormatSpec) or loaded.format_id != format_id:
        what = f"the spec of format {loaded.format_id!r}" if isinstance(loaded, FormatSpec) else type(loaded).__name__
        raise ConfigError(f"format {format_id}: {target!r} is {what}, not a FormatSpec of {format_id!r}")
    return loaded


@cache
def get(format_id: str) -> Parser:
    """The parser of a format id (never raises on a message); raises ConfigError naming the known ids."""
    found = spec(format_id)
    return Parser(format_id, found.version, found.parse)


def format_ids() -> list[str]:
    """The ids of the formats built into binlake (``binlake formats``, docs/formats.md)."""
    return sorted(FORMATS)
