"""A sink query's micro-batches as its checkpoint shows them: which are planned, committed, open.

Structured Streaming writes ``<checkpoint>/offsets/<id>`` when it plans a micro-batch (before running
it) and ``<checkpoint>/commits/<id>`` once the batch's work is committed. A batch with the first and not
the second is open: a process killed then leaves it open, and evidence that the kill landed inside it.
The sink kill tests aim with these (``tests/sink/test_sink_kill.py``, ``tests/chaos``).
"""

from __future__ import annotations

from pathlib import Path


def batch_ids(folder: Path) -> set[int]:
    return {int(p.name) for p in folder.glob("[0-9]*")} if folder.exists() else set()


def planned(checkpoint: Path) -> set[int]:
    """Ids of the batches the query has planned (their offsets are logged)."""
    return batch_ids(checkpoint / "offsets")


def open_batch(checkpoint: Path) -> bool:
    """True while a micro-batch is planned (offsets written) and not committed."""
    offsets, commits = planned(checkpoint), batch_ids(checkpoint / "commits")
    return bool(offsets) and max(offsets) not in commits


def fresh_open(checkpoint: Path, already: dict[Path, set[int]]) -> bool:
    """True while a batch planned since ``already`` was taken is open. A batch left open by the previous kill
    is replayed first (same id, no new offsets file): that replay must commit first. A fresh batch that
    committed before we looked moves ``already`` on: the next one is awaited."""
    committed, offsets = batch_ids(checkpoint / "commits"), planned(checkpoint)
    if not committed or not committed >= already[checkpoint] or not offsets - already[checkpoint]:
        return False
    if open_batch(checkpoint):
        return True
    already[checkpoint] = offsets
    return False
