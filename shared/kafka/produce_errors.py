"""Produce errors that are the record's own fault, and what the normalizer learns from them.

Most produce errors are the broker's or the network's: a leader moves, a request times
out, a connection drops (aiokafka marks these ``retriable``), or the cluster refuses the
client as a whole (an authorization error). The same record goes through once that is
over, so the runtime aborts the batch and retries after a back-off.

A few errors are the record's own and final: the broker (or the producer's own size
check) will never accept that record, however often it is sent, e.g. a canonical event
over the unified topic's ``max.message.bytes`` (a 601 KB Canal UPDATE becomes a 1.2 MB
event with its before and after images). Retrying such a record stalls its partition for
good, so the input message it came from is dead-lettered and the partition moves on.
They are the classes below, and only when aiokafka does not mark them retriable.

Which message is at fault is not always known at once. The producer packs many records
into one batch, and the broker refuses a whole batch when the batch is over the limit,
though each of its records may fit. So a refusal makes every message with a refused
record a *suspect*; the next pass produces each suspect alone (waiting for each of its
records before the next), and a refusal then is that message's own: its events are
replaced by a dead letter. A dead letter the broker refuses in turn is sent again without
key and value (their length and SHA-256 stay in headers; ``shared/kafka/letters.py``).
Each pass learns something, so a partition never loops on the same refusal.
"""

from __future__ import annotations

import asyncio
import bisect
from dataclasses import dataclass
from typing import Any, Final

from aiokafka import AIOKafkaProducer, ConsumerRecord
from aiokafka.errors import (
    CorruptRecordException,
    InvalidTimestampError,
    KafkaError,
    MessageSizeTooLargeError,
    RecordListTooLargeError,
    RecordTooLargeError,
)

REFUSED: Final = "refused"
"""Reject code (``binlake.error.class``, metric label) of messages whose canonical events Kafka refused."""

_RECORD_FAULTS: Final = (
    MessageSizeTooLargeError,  # over max.message.bytes (broker) or max_request_size (the producer's check)
    RecordTooLargeError,
    RecordListTooLargeError,
    CorruptRecordException,  # also the broker's INVALID_MESSAGE
    InvalidTimestampError,
)


def refused(exc: BaseException) -> bool:
    """Whether ``exc`` says Kafka will never accept the record (not an outage worth retrying)."""
    return isinstance(exc, _RECORD_FAULTS) and not getattr(exc, "retriable", False)


@dataclass(slots=True, frozen=True)
class Hit:
    """An input message one of whose records a produce refused."""

    letter: bool
    """The refused record was the message's dead letter (else one of its canonical events)."""
    alone: bool
    """The message's records were produced alone (or refused by the producer itself, record by record),
    so the refusal is the message's own; otherwise another message's record may share the blame."""
    error: str
    """The error's class name."""
    size: int
    """The input message's size in bytes (for the reason text)."""


class RefusedRecords(Exception):
    """Records of a batch were refused for good; ``hits`` maps their input offsets to what was refused."""

    def __init__(self, hits: dict[int, Hit], *, by_broker: bool) -> None:
        super().__init__(f"{len(hits)} input message(s) with records Kafka refused for good")
        self.hits = hits
        self.by_broker = by_broker
        """A broker refused a batch: the producer's sequence numbers for that partition have a gap now,
        so it must be replaced, not just aborted (its next batch there would fail as out of order)."""


class DeadLetterRefused(KafkaError):
    """The dead-letter topic refused even a bare letter (no key, no value): nothing is left to cut.

    Treated as an outage (back off, retry): the message is never dropped silently. Check the
    dead-letter topic's ``max.message.bytes`` and the producer's ACLs on it.
    """


@dataclass(slots=True)
class Treatment:
    """How the next passes produce one input message some of whose records were refused.

    Every treated message is produced alone; ``refusal`` and ``bare_letter`` say what was learned.
    """

    refusal: str | None = None
    """Its canonical events were refused for good: it is dead-lettered with this reason instead."""
    bare_letter: bool = False
    """Its dead letter was refused too: the letter goes without key and value."""


def learn(treatments: dict[int, Treatment], hits: dict[int, Hit], topic: str) -> bool:
    """Record what ``hits`` teach about each message; False when nothing new was learned.

    Nothing new means a bare letter was refused: nothing is left to cut, so the runtime
    treats it as an outage (backs off and retries) rather than looping.
    """
    learned = False
    for offset, hit in hits.items():
        treatment = treatments.get(offset)
        if treatment is None:
            treatments[offset] = treatment = Treatment()
            learned = True
        if not hit.alone:
            continue  # a suspect: produced alone next time
        if hit.letter:
            learned |= not treatment.bare_letter
            treatment.bare_letter = True
        elif treatment.refusal is None:
            treatment.refusal = refusal_reason(hit, topic)
            learned = True
    return learned


def refusal_reason(hit: Hit, topic: str) -> str:
    """The dead letter's reason: the error and sizes only, never a value of the row (personal data)."""
    return (
        f"{hit.error}: Kafka refused a canonical event of this {hit.size}-byte message for {topic} for good "
        "(an event over the topic's max.message.bytes or the producer's max_request_size, or an invalid record)"
    )


async def settle(
    sends: list[asyncio.Future[Any]],
    starts: list[int],
    records: list[ConsumerRecord[bytes, bytes]],
    letters: set[int],
) -> None:
    """Wait until ``sends`` are delivered; records Kafka refused for good raise ``RefusedRecords`` naming
    their input messages (``starts``: each record's first index in ``sends``; ``letters``: dead letters)."""
    try:
        await asyncio.gather(*sends)
    except KafkaError as exc:
        hits: dict[int, Hit] = {}
        for index, future in enumerate(sends):
            if not future.done() or future.cancelled():
                continue  # still in flight: the abort (or the producer's replacement) ends it
            error = future.exception()
            if error is not None and refused(error):
                record = records[bisect.bisect_right(starts, index) - 1]
                hits[record.offset] = Hit(index in letters, alone=False, error=type(error).__name__, size=size(record))
        if hits:
            raise RefusedRecords(hits, by_broker=True) from exc
        raise


async def deliver_alone(
    producer: AIOKafkaProducer,
    record: ConsumerRecord[bytes, bytes],
    topic: str,
    *,
    value: bytes,
    key: bytes | None,
    headers: list[tuple[str, bytes]] | None,
) -> None:
    """Send one record of ``record``'s message and wait for it: alone in its batch, a refusal is its own."""
    future = None
    try:
        future = await producer.send(topic, value, key=key, headers=headers)
        await future
    except KafkaError as exc:
        if not refused(exc):
            raise
        letter = headers is not None  # dead letters carry headers, canonical events none
        hit = Hit(letter, alone=True, error=type(exc).__name__, size=size(record))
        raise RefusedRecords({record.offset: hit}, by_broker=future is not None) from exc


def size(record: ConsumerRecord[bytes, bytes]) -> int:
    return len(record.value) if record.value is not None else 0
