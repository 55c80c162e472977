"""One message's outcome as a line of text: the sha256 of the exact records a codec publishes, or its reject code.

The unified topic receives, per event, a record key (``shared/kafka/records.py``) and a single-object Avro
value (``shared/codec/avro.py``), and nothing else of the codec's (the table, op and event time beside them
in ``Normalized.rows`` feed the metrics only). The golden corpus's ``out.jsonl`` pins the JSON view; this
pins those bytes, so a rewrite of the codec (issue #47) can show it publishes the same ones. Used by the
corpus's records manifest (``tests/corpus_records.py``) and the fuzz baseline (``tests/fuzz/baseline.py``).

- accepted: ``records=N sha256=HEX``, over every (key, value) in order, each part prefixed with its length
  (so no two sequences of records share a digest by moving bytes from one part to the next); a message
  that publishes nothing (a heartbeat, a transaction marker) is ``records=0`` and the empty digest;
- rejected: ``reject=CODE``; not the reason, whose wording may change where the code may not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

from binlake.shared.normalize import Normalized
from binlake.shared.parsing.result import Rejected


def records_sha256(pairs: Iterable[tuple[bytes, bytes]]) -> tuple[int, str]:
    """(record count, sha256 hex) of (key, value) records, in order."""
    digest = hashlib.sha256()
    count = 0
    for key, value in pairs:
        digest.update(len(key).to_bytes(8, "big"))
        digest.update(key)
        digest.update(len(value).to_bytes(8, "big"))
        digest.update(value)
        count += 1
    return count, digest.hexdigest()


def outcome_text(result: Normalized | Rejected) -> str:
    """``records=N sha256=HEX`` or ``reject=CODE`` (module doc)."""
    if isinstance(result, Rejected):
        return f"reject={result.code}"
    count, digest = records_sha256(result.pairs())
    return f"records={count} sha256={digest}"
