"""``make demo``: every vendor format through ``binlake normalize``, then the Kafka pipeline.

Part 1, offline. For each format, the golden sample messages of ``tests/corpus/<format>/`` (the
vendors' published samples and binlake's edge cases, good and bad) are written
one per line to ``demo-out/<format>.in.jsonl`` and run through the real command;
events land in ``demo-out/<format>.events.jsonl`` and rejects in
``demo-out/<format>.dlq.jsonl``. A table of counts and one event per format are
printed.

Part 2, Kafka (needs java and mvn; skipped with a note otherwise). A local
Apache Kafka broker starts (``binlake dev broker``), ``binlake generate`` writes
synthetic traffic in three vendor formats to three topics, one normalizer per
format turns it into canonical events on one unified topic, exactly once, and the
demo checks the unified topic against the generator's ground truth.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "tests" / "corpus"
OUT = REPO / "demo-out"
BINARY_FORMATS = {"oms-avro", "drs-avro"}


def _messages(folder: Path) -> list[bytes]:
    messages = []
    for path in sorted(folder.glob("*.in.*")):
        if path.name.endswith(".in.b64"):
            messages.append(path.read_text().strip().encode())
            continue
        raw = path.read_bytes()
        try:
            messages.append(json.dumps(json.loads(raw), ensure_ascii=False).encode())
        except ValueError:
            messages.append(base64.b64encode(raw) if folder.name in BINARY_FORMATS else raw.replace(b"\n", b" "))
    return messages


def _extra_args(folder: Path) -> list[str]:
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


def offline() -> None:
    OUT.mkdir(exist_ok=True)
    print(f"{'format':24} {'messages':>8} {'events':>7} {'rejected':>8} {'control':>7}")
    samples: dict[str, str] = {}
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        fmt = folder.name
        source = OUT / f"{fmt}.in.jsonl"
        source.write_bytes(b"\n".join(_messages(folder)) + b"\n")
        command = [sys.executable, "-m", "shared.cli.main", "normalize", "--format", fmt]
        command += _extra_args(folder)
        if fmt in BINARY_FORMATS:
            command.append("--base64")
        command += ["--dlq", str(OUT / f"{fmt}.dlq.jsonl"), str(source)]
        with open(OUT / f"{fmt}.events.jsonl", "wb") as events:
            done = subprocess.run(command, stdout=events, stderr=subprocess.PIPE, check=True)
        summary = json.loads(done.stderr.decode().rsplit("normalize: ", 1)[1])
        print(
            f"{fmt:24} {summary['messages']:>8} {summary['events']:>7} {summary['rejected']:>8} {summary['control']:>7}"
        )
        first = (OUT / f"{fmt}.events.jsonl").read_text().split("\n", 1)[0]
        if first:
            samples[fmt] = first
    print("\nOne event per format (full output in demo-out/):")
    for fmt, line in samples.items():
        event = json.loads(line)
        brief = {k: event[k] for k in ("op", "order_key", "primary_key", "before", "after")}
        print(f"- {fmt}: {json.dumps(brief, ensure_ascii=False)[:300]}")


def main() -> int:
    offline()
    from shared.cli.demo_kafka import kafka_demo

    return kafka_demo(OUT)


if __name__ == "__main__":
    sys.exit(main())
