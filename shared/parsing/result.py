"""What a parser returns for one vendor message."""

from __future__ import annotations

from dataclasses import dataclass

from binlake.shared.event.model import ChangeEvent


@dataclass(slots=True, frozen=True)
class Heartbeat:
    """A vendor heartbeat: the source was alive at ``ts_ms``.

    ``table`` is ``db.table`` when the heartbeat names one. No event is emitted
    for it; the runtime feeds a freshness gauge.
    """

    ts_ms: int
    table: str | None = None


@dataclass(init=False, slots=True)  # an __init__ of its own: mypyc compiles it native (``event.model``)
class Parsed:
    """The outcome of parsing one accepted message.

    ``events`` may be empty for control messages (heartbeats, transaction
    markers); ``control`` then names what the message was, so the runtime can
    count it instead of dropping it silently.
    """

    events: list[ChangeEvent]
    heartbeats: list[Heartbeat]
    control: str | None

    def __init__(
        self, events: list[ChangeEvent], heartbeats: list[Heartbeat] | None = None, control: str | None = None
    ) -> None:
        self.events = events
        self.heartbeats = [] if heartbeats is None else heartbeats
        self.control = control


@dataclass(slots=True, frozen=True)
class Rejected:
    """The message is dead-lettered with this code and reason."""

    code: str
    reason: str


ParseOutcome = Parsed | Rejected
