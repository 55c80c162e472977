"""The ``order_key``: one sortable string that puts a table's changes in source order.

Every vendor's key has the same shape, ``MMMMMMMMMMMMMMMMMMMM.NNNNNNNNNNNNNNNNNNNN.RRRRRR``:
a 20-digit major and a 20-digit minor component, and the 6-digit index of
the row inside the vendor message. Fixed widths make string order equal
numeric order. Major and minor come from a real log position where the vendor
gives one on every message (binlog file index and offset, GoldenGate trail
position, PostgreSQL LSN, DRS's event sequence); otherwise from the input's
Kafka order, ``kafka_order_key`` (partition, offset): never from a timestamp,
which is not monotonic across transactions, and never so that a row index can
sort ahead of a later message's key. Which one each format uses is documented
per format in docs/formats.md and summed up in docs/canonical-event.md
("order_key").

One key space per stream: which of the two a format uses is decided by its
configuration (option ``order``, ``by_position``) or by a field that is the
same on every message of a stream (Debezium's ``source.connector``), never by
whether a field happens to be present on one message. A message that lacks
the position its stream is keyed by is a reject, not a key of the other space.
"""

from __future__ import annotations

import re
from typing import Final

from binlake.shared.parsing.context import ParseContext
from binlake.shared.parsing.errors import BAD_FIELD, CONFIG, RejectError

ORDER_KAFKA: Final = "kafka"
ORDER_POSITION: Final = "position"
"""The values of option ``order`` (``shared.parsing.options.OrderOption``)."""

_MAX: Final = 10**20 - 1
_TRAILING_DIGITS: Final = re.compile(r"(\d+)\D*$")


def order_key(major: int, minor: int, row: int) -> str:
    if not (0 <= major <= _MAX and 0 <= minor <= _MAX and 0 <= row <= 999_999):
        raise RejectError(BAD_FIELD, f"position ({major}, {minor}, row {row}) is outside the sortable range")
    # The three numbers are in range (checked above): zero-filled, as "%020d.%020d.%06d" writes them, without
    # reading a format string per event (compiled, several times faster than the % operator).
    return str(major).zfill(20) + "." + str(minor).zfill(20) + "." + str(row).zfill(6)


def kafka_order_key(ctx: ParseContext, row: int = 0) -> str:
    """The key of row ``row`` of the message at ``ctx``: input partition, input offset, row.

    For vendors that give no position on every message. The vendor wrote its
    messages to each input partition in source order, so within one input
    partition this is the source order of a row's changes, ties impossible and
    row ``n`` of a message always below every row of a later message. Keys of
    different input partitions do not compare.
    """
    return order_key(ctx.partition, ctx.offset, row)


def binlog_index(file_name: str) -> int:
    """The sequence number of a binlog file: ``mysql-bin.000070`` is 70."""
    m = _TRAILING_DIGITS.search(file_name[-64:])
    if m is None or len(m.group(1)) > 20:
        raise RejectError(BAD_FIELD, f"binlog file name {file_name[:80]!r} has no sequence number of at most 20 digits")
    return int(m.group(1))


def by_position(ctx: ParseContext, default: bool) -> bool:
    """Option ``order``: True for ``position`` (key by the vendor's log position), False for ``kafka``
    (the input's Kafka order); unset or empty: ``default``, the format's own. The same for every
    message of a run, so a stream never mixes the two key spaces."""
    value = ctx.options.get("order")
    if value is None or value == "":
        return default
    if value == ORDER_POSITION:
        return True
    if value == ORDER_KAFKA:
        return False
    raise RejectError(CONFIG, f"option order {repr(value)[:60]} is not one of {ORDER_KAFKA}, {ORDER_POSITION}")
