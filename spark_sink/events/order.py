"""The sink's total order of a table's events: ``order_key``, then where the change was read.

``order_key`` orders a table's changes by their source position, but two
different changes can share one (a vendor position that is coarse, a binlog
event holding several rows) and the mirrors must still apply them in source
order, never pick one at random, and never drop the later one as "not newer".
So everywhere the sink orders or compares events (the fold of a batch, a
mirror row's and a tombstone's floor, TRUNCATE bounds, history versions,
``binlake lake verify``) it uses the *sequence*:

    order_key # origin.topic # origin.partition # origin.offset # origin.row

(partition, offset and row zero-padded, ``#`` sorting below every character of
an ``order_key`` or a topic name, so string order is the order of the tuple).

Why the origin (the vendor message's Kafka coordinates and the row's index in
it) breaks ties: the normalizer publishes a row's changes to one partition of
the unified topic in the order it read them from their input partition, so
among tied changes the input position is the unified topic's order, and it is
the order the vendor wrote them in. Unlike the unified topic's own offset, it
is the same for every copy of one change: a change delivered twice (``binlake
dlq replay`` run twice, a replay under a new checkpoint) has one sequence, so
it is applied once and makes one history version. No two changes share an
origin: the normalizer makes at most one event per row of a vendor message.

A mirror written by an earlier release stores a bare ``order_key``: it sorts
just below every sequence of that ``order_key``, so those rows compare as the
earliest change at their position (a replayed copy of one is applied again,
with the same values).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column
from pyspark.sql import functions as F

SEPARATOR: Final = "#"


def sequence_sql(event: str = "") -> str:
    """The sequence as SQL text over a changelog row (``event``: a struct prefix such as ``"e."``)."""
    origin = f"{event}origin"
    return (
        f"concat({event}order_key, '{SEPARATOR}', {origin}.topic, '{SEPARATOR}', "
        f"lpad(CAST({origin}.partition AS STRING), 10, '0'), '{SEPARATOR}', "
        f"lpad(CAST({origin}.offset AS STRING), 20, '0'), '{SEPARATOR}', "
        f"lpad(CAST({origin}.row AS STRING), 10, '0'))"
    )


def origin_sql(event: str = "") -> str:
    """An event's origin as one string, ``topic#partition#offset#row`` (its identity: one per change)."""
    return sequence_sql(event).replace(f"concat({event}order_key, '{SEPARATOR}', ", "concat(", 1)


def sequence() -> Column:
    """The sequence of each changelog row, as a column."""
    return F.expr(sequence_sql())


def sequence_of(order_key: str, topic: str, partition: int, offset: int, row: int) -> str:
    """The sequence of one event (Python twin of ``sequence_sql``, for tools and tests)."""
    return SEPARATOR.join((order_key, topic, f"{partition:010d}", f"{offset:020d}", f"{row:010d}"))


def order_key_of(sequence_text: str) -> str:
    """The ``order_key`` part of a sequence (a bare ``order_key`` from an earlier release is returned as is)."""
    return sequence_text.split(SEPARATOR, 1)[0]
