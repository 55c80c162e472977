"""The golden corpus's records manifest: ``tests/corpus/records.sha256``, each case's exact Kafka records.

A golden case's ``out.jsonl`` holds the JSON view of its events; the unified topic carries other bytes,
the record key and the single-object Avro value of each event. The manifest pins those: one line per case
(``tests.corpus_cases.cases()`` order), its id and what the Python codec (``PythonCodec``, the parser,
the Avro encoding and the record keys: the route without a native lane) gives for it at the case's own
coordinates (topic ``corpus``, partition 0, offset 0, which the events' origin and some order keys carry)::

    canal-json/edge-ddl-truncate records=1 sha256=3a86618f...
    canal-json/reject-bad-int-value reject=bad_value

(``tests/support/record_digest.py`` defines both forms.) Nothing in a record reads the clock: an event's
times come from the message, its origin from the coordinates above, so the same code gives the same bytes.
``tests/formats/test_corpus_records.py`` recomputes it, and holds the native lanes to it.

``python -m tests.corpus_records`` lists the cases whose records differ from the manifest (exit 1 if any);
``python -m tests.corpus_records --write`` rewrites the manifest from the current code. A change of records
is a change of what every consumer of the unified topic reads: say in the commit why each one changed.
"""

from __future__ import annotations

import sys
from pathlib import Path

from binlake.shared.normalize import PythonCodec
from tests.corpus_cases import CORPUS, Case, cases
from tests.support.record_digest import outcome_text

MANIFEST = CORPUS / "records.sha256"
HEADER = "# Each golden case's records: python -m tests.corpus_records --write (see tests/corpus_records.py)\n"


def python_outcome(case: Case) -> str:
    """What the Python codec publishes for ``case``, as ``record_digest.outcome_text``."""
    ctx = case.context()
    codec = PythonCodec(case.format_id, ctx)
    return outcome_text(codec(case.raw(), ctx.topic, ctx.partition, ctx.offset))


def read(path: Path = MANIFEST) -> dict[str, str]:
    """The manifest: case id -> outcome text."""
    found: dict[str, str] = {}
    for line in path.read_text("utf-8").splitlines():
        if line and not line.startswith("#"):
            case_id, _, outcome = line.partition(" ")
            found[case_id] = outcome
    return found


def render() -> str:
    """The manifest of the current code."""
    return HEADER + "".join(f"{case.id} {python_outcome(case)}\n" for case in cases())


def main(argv: list[str]) -> int:
    if argv == ["--write"]:
        MANIFEST.write_text(render(), "utf-8")
        print(f"wrote {MANIFEST}")
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    pinned = read()
    current = {case.id: python_outcome(case) for case in cases()}
    differ = sorted(k for k in pinned.keys() | current.keys() if pinned.get(k) != current.get(k))
    for case_id in differ:
        print(f"{case_id}: manifest {pinned.get(case_id, '(none)')}, now {current.get(case_id, '(no case)')}")
    print(f"{len(current)} cases, {len(differ)} differ from {MANIFEST.name}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
