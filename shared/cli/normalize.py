"""``binlake normalize``: the offline normalizer, one vendor message per input line.

It runs the service's codec (``shared.normalize``: the format's parser, then the
kernel's typed values and encoding). Canonical events go to stdout (the JSON
view, or base64 single-object Avro with ``--output avro``): each is rendered from the
very record the service would publish. Every rejected line goes to the dead-letter file
(or stderr) as a JSON object with its line number, reason and raw bytes; the run goes
on and exits 0. A summary goes to stderr.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import orjson

from binlake.shared.codec import avro
from binlake.shared.errors import ConfigError
from binlake.shared.kernel._kernel import render_json
from binlake.shared.normalize import codec_for
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.errors import MALFORMED
from binlake.shared.parsing.result import Rejected

_FLUSH_EVERY = 512


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", required=True, metavar="ID", help="vendor format id, or 'auto'")
    parser.add_argument(
        "--source-table", metavar="DB.TABLE", help="table for formats whose messages name none (debezium-smt)"
    )
    parser.add_argument(
        "--source-timezone",
        default="UTC",
        metavar="TZ",
        help="IANA zone in which wall-clock TIMESTAMP strings are read (default UTC)",
    )
    parser.add_argument("--dlq", metavar="PATH", help="dead-letter file for rejected lines (default: stderr)")
    parser.add_argument("--base64", action="store_true", help="each input line is the base64 of the raw message")
    parser.add_argument("--output", choices=("json", "avro"), default="json", help="json view or base64 Avro lines")
    parser.add_argument(
        "--avro-schema", metavar="AVSC", help="the vendor's Avro schema file (drs-avro: DRS record schema)"
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="format option, e.g. bytes_encoding=base64 (repeatable)",
    )
    parser.add_argument(
        "--format-spec",
        action="append",
        default=[],
        metavar="ID=MODULE:ATTR",
        help="a format of your own: its id and its FormatSpec, as BINLAKE_FORMAT_SPECS (repeatable)",
    )
    parser.add_argument("input", nargs="?", default="-", help="input file, or - for stdin (default)")


def build_context(args: argparse.Namespace, topic: str) -> ParseContext:
    try:
        tz = zone(args.source_timezone)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc
    options: dict[str, Any] = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--option {item!r}: expected KEY=VALUE")
        options[key.strip()] = value
    if args.avro_schema:
        try:
            options["avro_schema"] = json.loads(Path(args.avro_schema).read_text("utf-8"))
        except (OSError, ValueError) as exc:
            raise ConfigError(f"--avro-schema {args.avro_schema}: cannot read a JSON schema: {exc}") from exc
    table = args.source_table
    if table is not None and "." not in table:
        raise ConfigError(f"--source-table {table!r}: expected DB.TABLE")
    return ParseContext(topic=topic, source_table=table, source_timezone=tz, options=options)


def _lines(stream: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    for number, line in enumerate(stream, start=1):
        if line.endswith(b"\n"):
            line = line[:-1]
            if line.endswith(b"\r"):
                line = line[:-1]
        yield number, line


def register_formats(items: list[str]) -> None:
    """``--format-spec ID=MODULE:ATTR`` items into the format registry."""
    for item in items:
        format_id, sep, target = item.partition("=")
        if not sep:
            raise ConfigError(f"--format-spec {item!r}: expected ID=MODULE:ATTR")
        try:
            registry.register(format_id.strip(), target.strip())
        except ConfigError as exc:
            raise ConfigError(f"--format-spec: {exc}") from None


def run(args: argparse.Namespace) -> int:
    register_formats(args.format_spec)
    topic = "stdin" if args.input == "-" else os.path.basename(args.input)
    codec = codec_for(args.format, build_context(args, topic))
    source: IO[bytes] = sys.stdin.buffer if args.input == "-" else open(args.input, "rb")  # noqa: SIM115
    dlq: IO[bytes] = open(args.dlq, "wb") if args.dlq else sys.stderr.buffer  # noqa: SIM115
    out = sys.stdout.buffer
    render = json_line() if args.output == "json" else base64.b64encode
    messages = events = rejected = control = blank = 0
    pending: list[bytes] = []
    try:
        for number, line in _lines(source):
            if not line or line.isspace():
                blank += 1
                continue
            messages += 1
            raw = line
            if args.base64:
                try:
                    raw = base64.b64decode(line, validate=True)
                except binascii.Error as exc:
                    rejected += 1
                    _dead_letter(dlq, number, args.format, Rejected(MALFORMED, f"line is not base64: {exc}"), line)
                    continue
            normalized = codec(raw, topic, 0, number)  # the line number is the event's origin offset
            if isinstance(normalized, Rejected):
                rejected += 1
                _dead_letter(dlq, number, args.format, normalized, raw)
                continue
            if not normalized.rows:
                control += 1
            for _, _, _, values in normalized.rows:
                pending.extend(render(values[i]) for i in range(1, len(values), 2))
                events += len(values) // 2
            if len(pending) >= _FLUSH_EVERY:
                out.write(b"\n".join(pending) + b"\n")
                pending.clear()
        if pending:
            out.write(b"\n".join(pending) + b"\n")
        out.flush()
    finally:
        if source is not sys.stdin.buffer:
            source.close()
        if dlq is not sys.stderr.buffer:
            dlq.close()
    summary = {
        "messages": messages,
        "events": events,
        "rejected": rejected,
        "control": control,
        "blank_lines": blank,
    }
    sys.stderr.write("normalize: " + json.dumps(summary) + "\n")
    return 0


def json_line() -> Callable[[bytes], bytes]:
    """A record value's JSON view (``shared.codec.json_view``), rendered by the kernel straight from the
    record's bytes."""
    fingerprint = avro.fingerprint()
    return lambda value: render_json(value, fingerprint)


def _dead_letter(dlq: IO[bytes], line: int, format_id: str, outcome: Rejected, raw: bytes) -> None:
    record = {
        "line": line,
        "format": format_id,
        "code": outcome.code,
        "reason": outcome.reason,
        "raw_base64": base64.b64encode(raw).decode("ascii"),
    }
    dlq.write(orjson.dumps(record) + b"\n")
