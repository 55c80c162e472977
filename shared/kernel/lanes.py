"""Which lane runs a format, and the record it returns."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Final, Protocol

from binlake.shared.parsing.context import ParseContext

log = logging.getLogger("binlake.kernel")

Taken = tuple[str, str, int | None, list[bytes]]
"""What a lane makes of one message: ("database.table", op, event time in ms or None,
[record key, single-object Avro value, key, value, ...] for its rows in order)."""


def _lane_failed() -> type[Exception]:
    try:
        from binlake.shared.kernel._kernel import LaneFailed as failed
    except ImportError:  # no extension, no lane: nothing raises it
        return _NoLane
    return failed


class _NoLane(Exception):
    pass


LaneFailed: Final = _lane_failed()
"""What a lane raises when it crashed on a message (a caught Rust panic: a bug in the lane)."""


class Lane(Protocol):
    def parse(self, raw: bytes, topic: str, partition: int, offset: int) -> Taken | None:
        """What the lane makes of one message, or None: the Python parser takes the message.

        Raises ``LaneFailed`` when it crashed on it."""
        ...

    def planned(self) -> int:
        """How many type maps the lane has planned so far."""
        ...


def available() -> bool:
    """Whether the native extension was built (it is optional: no Rust toolchain, no lane)."""
    try:
        from binlake.shared.kernel import _kernel  # noqa: F401
    except ImportError:
        return False
    return True


def last_decline() -> str:
    """Where the last lane to decline a message stopped (``src/decline.rs``): call it right after a
    ``parse`` that returned None, before any other lane runs."""
    try:
        from binlake.shared.kernel import _kernel
    except ImportError:  # no extension, so no native lane: only a test's Python lane can have declined
        return "read"
    return _kernel.last_decline()


def lane_for(format_id: str, ctx: ParseContext, topic_tables: Mapping[str, str] | None = None) -> Lane | None:
    """The lane for ``format_id`` under these parse settings, or None (the Python parser does it all).

    Each format's factory lives in its home (``services/<format>/lane.py``, named by its ``FormatSpec``).
    ``topic_tables``: each topic's ``db.table`` for formats whose messages may name no table (the
    runtime's per-topic ``source_table``); other topics take ``ctx.source_table``.
    """
    if not available():
        return None
    from binlake.shared.parsing import registry

    factory = registry.spec(format_id).lane_factory()
    return None if factory is None else factory(ctx, topic_tables or {})
