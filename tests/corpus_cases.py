"""The conformance corpus: golden vendor messages and their canonical output.

Layout: ``tests/corpus/<format-id>/<case>.<ext>`` where ``<ext>`` is

- ``in.json`` (the raw message bytes, as the vendor sends them; ``in.txt`` for a
  format of text lines) or ``in.b64`` (base64 of binary messages, one message);
- ``out.jsonl``: the expected events in the JSON view, one per line, in order
  (empty file: accepted with no events, e.g. a heartbeat); or
  ``reject.json``: ``{"code": ..., "reason_contains": ...}`` for a message that
  must be dead-lettered;
- optional ``ctx.json``: ``{"source_table", "source_timezone", "options",
  "avro_schema_file"}`` (a file name inside the same folder).

Every format folder has a README.md saying where each case comes from (seed
document and section, or the edge case it covers).

``python -m tests.corpus_cases regen FORMAT [CASE]`` rewrites ``out.jsonl``
from the current parsers; review the diff by hand before committing it.

``tests/corpus/records.sha256`` pins each case's Kafka records (key and Avro value
bytes), not only their JSON view: ``tests/corpus_records.py``.
"""

from __future__ import annotations

import base64
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binlake.shared.codec import json_view
from binlake.shared.parsing import registry
from binlake.shared.parsing.context import ParseContext, zone
from binlake.shared.parsing.result import ParseOutcome

CORPUS = Path(__file__).parent / "corpus"


@dataclass(frozen=True)
class Case:
    format_id: str
    name: str
    folder: Path

    @property
    def id(self) -> str:
        return f"{self.format_id}/{self.name}"

    def raw(self) -> bytes:
        for text in ("json", "txt"):
            path = self.folder / f"{self.name}.in.{text}"
            if path.exists():
                return path.read_bytes()
        return base64.b64decode((self.folder / f"{self.name}.in.b64").read_text().strip())

    def context(self) -> ParseContext:
        path = self.folder / f"{self.name}.ctx.json"
        spec: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        options = dict(spec.get("options", {}))
        if "avro_schema_file" in spec:
            options["avro_schema"] = json.loads((self.folder / spec["avro_schema_file"]).read_text())
        return ParseContext(
            topic="corpus",
            partition=0,
            offset=0,
            source_table=spec.get("source_table"),
            source_timezone=zone(spec.get("source_timezone", "UTC")),
            options=options,
        )

    def expected_reject(self) -> dict[str, str] | None:
        path = self.folder / f"{self.name}.reject.json"
        if not path.exists():
            return None
        loaded: dict[str, str] = json.loads(path.read_text())
        return loaded

    def expected_events(self) -> list[dict[str, Any]]:
        path = self.folder / f"{self.name}.out.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def run(self) -> ParseOutcome:
        return registry.get(self.format_id)(self.raw(), self.context())


def cases() -> list[Case]:
    found: list[Case] = []
    for folder in sorted(p for p in CORPUS.iterdir() if p.is_dir()):
        names = sorted({p.name.split(".")[0] for p in folder.iterdir() if ".in." in p.name})
        found.extend(Case(folder.name, name, folder) for name in names)
    return found


def rendered(outcome: ParseOutcome) -> list[dict[str, Any]]:
    from binlake.shared.parsing.result import Parsed

    assert isinstance(outcome, Parsed), outcome
    return [json.loads(json_view.render(event)) for event in outcome.events]


def _regen(format_id: str, only: str | None) -> None:
    from binlake.shared.parsing.result import Rejected

    for case in cases():
        if case.format_id != format_id or (only and case.name != only):
            continue
        outcome = case.run()
        if isinstance(outcome, Rejected):
            print(f"{case.id}: rejected {outcome.code}: {outcome.reason}")
            continue
        lines = [json_view.render(event).decode() for event in outcome.events]
        (case.folder / f"{case.name}.out.jsonl").write_text("".join(line + "\n" for line in lines))
        print(f"{case.id}: {len(lines)} event(s)")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "regen":
        _regen(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        print(__doc__)
