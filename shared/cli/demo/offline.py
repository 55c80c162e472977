"""The demo's offline part: every format's golden samples through the real ``binlake normalize``.

For each folder of ``tests/corpus/`` (the vendors' published samples and
binlake's edge cases, good and bad) the samples are written one per line to
``<out>/offline/<format>.in.jsonl`` exactly as they are: a pretty-printed JSON
sample is joined onto one line (its line breaks are JSON whitespace: the
values keep every byte and digit), a binary sample goes as base64 with
``--base64``. Nothing is decoded and re-encoded, so the events show what
``binlake normalize`` makes of the vendor's own bytes (maxwell's 39-digit
``amount`` keeps its digits). Events land in ``<format>.events.jsonl``, rejects
in ``<format>.dlq.jsonl``; the counts are returned for one summary table.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Final

REPO: Final = Path(__file__).resolve().parents[3]
CORPUS: Final = REPO / "tests" / "corpus"
BINARY_FORMATS: Final = frozenset({"oms-avro", "drs-avro"})


@dataclass(frozen=True, slots=True)
class OfflineResult:
    format_id: str
    messages: int
    events: int
    rejected: int
    control: int


def messages(folder: Path) -> list[bytes]:
    """The folder's input samples, one line each, bytes as they are."""
    out = []
    for path in sorted(folder.glob("*.in.*")):
        raw = path.read_bytes()
        if path.name.endswith(".in.b64"):
            out.append(raw.strip())
        elif folder.name in BINARY_FORMATS:
            out.append(base64.b64encode(raw))
        else:
            out.append(raw.strip().replace(b"\r\n", b" ").replace(b"\n", b" ").replace(b"\r", b" "))
    return out


def extra_args(folder: Path) -> list[str]:
    """The first case context of a folder that needs one (source table, Avro schema)."""
    for ctx_path in sorted(folder.glob("*.ctx.json")):
        spec = json.loads(ctx_path.read_text())
        args: list[str] = []
        if "source_table" in spec:
            args += ["--source-table", spec["source_table"]]
        if "avro_schema_file" in spec:
            args += ["--avro-schema", str(folder / spec["avro_schema_file"])]
        if args:
            return args
    return []


def normalize_folder(folder: Path, out: Path) -> OfflineResult:
    fmt = folder.name
    source = out / f"{fmt}.in.jsonl"
    source.write_bytes(b"\n".join(messages(folder)) + b"\n")
    command = [sys.executable, "-m", "binlake.shared.cli.main", "normalize", "--format", fmt, *extra_args(folder)]
    if fmt in BINARY_FORMATS:
        command.append("--base64")
    command += ["--dlq", str(out / f"{fmt}.dlq.jsonl"), str(source)]
    with open(out / f"{fmt}.events.jsonl", "wb") as events:
        done = subprocess.run(command, stdout=events, stderr=subprocess.PIPE, check=True)
    summary = json.loads(done.stderr.decode().rsplit("normalize: ", 1)[1])
    return OfflineResult(fmt, summary["messages"], summary["events"], summary["rejected"], summary["control"])


def run(out: Path, *, workers: int = 2) -> list[OfflineResult]:
    """Every corpus folder through ``binlake normalize`` (two at a time); results in folder order."""
    out.mkdir(parents=True, exist_ok=True)
    folders = sorted(p for p in CORPUS.iterdir() if p.is_dir())
    with ThreadPoolExecutor(workers) as pool:
        return list(pool.map(lambda folder: normalize_folder(folder, out), folders))
