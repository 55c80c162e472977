"""Format ids to vendor parsers, imported only when first used.

To add a vendor format: write ``services/<name>/parser.py`` with

    FORMAT_ID = "my-format"
    PARSER_VERSION = "1"
    def parse(raw: bytes, ctx: ParseContext) -> Parsed: ...

(pure: no I/O; raise ``RejectError`` for anything it cannot normalize), add a
line to ``FORMATS`` below, and add its golden cases under ``tests/corpus/``.
Nothing else changes: the offline CLI, the Kafka runtime and ``auto``
detection all reach parsers through this registry.
"""

from __future__ import annotations

import importlib
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Final

from shared.errors import ConfigError
from shared.parsing.context import ParseContext
from shared.parsing.errors import INTERNAL, RejectError
from shared.parsing.result import Parsed, ParseOutcome, Rejected
from shared.parsing.validate import check_event

ParseFn = Callable[[bytes, ParseContext], Parsed]

FORMATS: Final[dict[str, str]] = {
    "canal-json": "services.canal_json.parser",
    "kafkariver-canal": "services.kafkariver_canal.parser",
    "ckafka-v1": "services.ckafka_v1.parser",
    "drs-json": "services.drs_json.parser:parse_json",
    "drs-json-c": "services.drs_json.parser:parse_json_c",
    "drs-avro": "services.drs_avro.parser",
    "oms-default": "services.oms_default.parser:parse_default",
    "oms-extend-column-type": "services.oms_default.parser:parse_extend_column_type",
    "oms-dataworks": "services.oms_dataworks.parser",
    "oms-shareplex": "services.oms_shareplex.parser",
    "debezium-json": "services.debezium_json.parser",
    "debezium-smt": "services.debezium_smt.parser",
    "oms-avro": "services.oms_avro.parser",
    "maxwell-json": "services.maxwell_json.parser",
    "ogg-json": "services.ogg_json.parser",
    "auto": "services.auto.parser",
}
"""Format id -> ``module`` (its ``parse``) or ``module:function``."""


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
def get(format_id: str) -> Parser:
    """The parser for a format id; raises ConfigError naming the known ids."""
    target = FORMATS.get(format_id)
    if target is None:
        raise ConfigError(f"unknown format {format_id!r}; known formats: {', '.join(sorted(FORMATS))}")
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    parse = getattr(module, attr or "parse")
    version = str(getattr(module, "PARSER_VERSION", "1"))
    return Parser(format_id, version, parse)


def format_ids() -> list[str]:
    return sorted(FORMATS)
