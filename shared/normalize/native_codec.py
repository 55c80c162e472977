"""The native codec: the format's fast lane first, the Python codec for every message it leaves."""

from __future__ import annotations

from binlake.shared.kernel import Lane, LaneFailed, last_decline
from binlake.shared.normalize.codec import Normalized
from binlake.shared.normalize.python_codec import PythonCodec
from binlake.shared.normalize.tables import TableFilter
from binlake.shared.parsing.result import Rejected

TAKEN = "taken"
DECLINED = "declined"
"""The lane does not read this message with certainty (DDL, an unusual spelling, a reject...)."""
FAILED = "failed"
"""The lane crashed on this message (a bug in it, logged by the extension): the parser read it instead."""
CONTROL = "control"
"""The decline reason of a message that carries no change (a heartbeat, a transaction marker): lanes read
changes only (a DDL is a change, declined at ``operation``). Other reasons name the part of the message
where the lane stopped (``shared/kernel/src/decline.rs``: read, envelope, operation, types, values, keys)."""


class NativeCodec:
    native = True

    def __init__(self, lane: Lane, python: PythonCodec, *, tables: TableFilter | None = None) -> None:
        self.lane = lane
        self.python = python
        self.format_id = python.format_id
        self.version = python.version
        self._tables = tables if tables is not None and tables.active else None

    def __call__(self, raw: bytes, topic: str, partition: int, offset: int) -> Normalized | Rejected:
        try:
            taken = self.lane.parse(raw, topic, partition, offset)
        except LaneFailed:
            how = FAILED
        else:
            if taken is not None:
                wanted = self._tables
                if wanted is not None and not wanted(taken[0]):
                    return Normalized([], filtered=((taken[0], len(taken[3]) // 2),), lane=TAKEN)
                return Normalized([taken], lane=TAKEN)
            how = DECLINED
            stage = last_decline()  # read now: the parser below may run another lane (auto)
        normalized = self.python(raw, topic, partition, offset)
        if not isinstance(normalized, Rejected):
            normalized.lane = how
            if how is DECLINED:
                normalized.decline = CONTROL if normalized.control is not None and not normalized.rows else stage
        return normalized
