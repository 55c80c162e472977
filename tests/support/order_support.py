"""What the order-key tests share: parse messages at consecutive offsets of one input partition.

Issue 16 (tied and inverted ``order_key``s): every format's key must put a row's
changes in the order the vendor wrote them. The tests feed messages as they would
arrive on one input partition (consecutive offsets) and require the keys of all
their events, message by message and row by row, to increase strictly.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import Any

from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.result import Parsed, ParseOutcome

Parser = Callable[[bytes, ParseContext], ParseOutcome]

PARTITION = 3
FIRST_OFFSET = 1000


def raw(message: bytes | dict[str, Any]) -> bytes:
    return message if isinstance(message, bytes) else json.dumps(message).encode()


def keys_in_input_order(
    parse: Parser, messages: Sequence[bytes | dict[str, Any]], ctx: ParseContext | None = None
) -> list[str]:
    """Every event's ``order_key``, message by message (at offsets FIRST_OFFSET, +1...), row by row."""
    base = ctx or ParseContext()
    keys: list[str] = []
    for index, message in enumerate(messages):
        outcome = parse(raw(message), base.at("in", PARTITION, FIRST_OFFSET + index))
        assert isinstance(outcome, Parsed), f"message {index} rejected: {outcome}"
        assert outcome.events, f"message {index} made no event"
        keys.extend(event.order_key for event in outcome.events)
    return keys


def assert_strictly_increasing(keys: list[str]) -> None:
    for earlier, later in itertools.pairwise(keys):
        assert earlier < later, f"order_key {later} does not sort after {earlier}, which came before it"


def kafka_key(offset: int, row: int = 0, partition: int = PARTITION) -> str:
    """``kafka_order_key`` of row ``row`` of the message at ``offset``."""
    return f"{partition:020d}.{offset:020d}.{row:06d}"
