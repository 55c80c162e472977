"""The ground truth of a chaos run: the demo's traffic per format, and where each message landed.

Each format's messages, schema changes, poison and final table rows come from the demo's generator
(``shared.cli.demo.traffic``). The player (``player``) records each message's Kafka coordinates as it
is produced: a row change or schema change must become exactly one canonical event whose origin is
those coordinates, a poison message exactly one dead letter.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from binlake.shared.cli.demo import traffic as demo_traffic
from binlake.shared.cli.demo.traffic import Traffic

Coordinates = tuple[str, int, int]
"""A vendor message's topic, partition and offset."""
POISON_KEY = b"poison"
"""The Kafka key the demo's traffic gives its poison messages."""


@dataclass
class Truth:
    traffic: dict[str, Traffic]
    events: set[Coordinates] = field(default_factory=set)
    """Messages that must each become one event (filled as they are produced)."""
    poison: set[Coordinates] = field(default_factory=set)
    """Messages that must each become one dead letter."""
    placed: Counter[tuple[str, int]] = field(default_factory=Counter)
    """Messages placed so far per vendor partition (``busy``)."""

    @classmethod
    def build(cls, formats: list[str], changes: int, tables: int, seed: int) -> Truth:
        """``changes`` spread evenly over ``formats``, ``tables`` tables each."""
        each = max(1, changes // len(formats))
        return cls(
            {fmt: demo_traffic.build(fmt, changes=each, tables=tables, seed=seed + i) for i, fmt in enumerate(formats)}
        )

    def place(self, topic: str, key: bytes | None, partition: int, offset: int) -> None:
        (self.poison if key == POISON_KEY else self.events).add((topic, partition, offset))
        self.placed[topic, partition] += 1

    def busy(self) -> set[tuple[str, int]]:
        """The vendor partitions that carry a tenth of their topic's traffic so far or more: a normalizer that
        owns none of them (only a partition a poison message went to, say) seldom has a transaction open."""
        topics: Counter[str] = Counter()
        for (topic, _), count in self.placed.items():
            topics[topic] += count
        return {(topic, p) for (topic, p), count in self.placed.items() if count * 10 >= topics[topic]}

    @property
    def changes(self) -> int:
        return sum(item.changes for item in self.traffic.values())

    @property
    def messages(self) -> int:
        return sum(len(item.messages) for item in self.traffic.values())

    def source_tables(self) -> dict[str, str]:
        """Source table -> the format that feeds it."""
        return {table: fmt for fmt, item in self.traffic.items() for table in item.truth}

    def row_events(self, table: str) -> int:
        """Row changes the traffic made to ``table``: its messages (keyed by table) less its schema changes."""
        fmt = self.source_tables()[table]
        item = self.traffic[fmt]
        messages = sum(1 for key, _ in item.messages if key == table.encode())
        return messages - sum(1 for control in item.controls if control.endswith(f" {table}"))
