"""What binlake writes to Kafka besides the event body: keys and dead-letter headers.

Unified topic key: all changes of one row must land in one partition in source
order, so the key is the row's identity, ``[database, schema, table, [key
values]]`` as compact JSON (key values in the JSON view's renderings; the kernel
writes it, ``shared/kernel/src/encode.rs``). A table
without a primary key, and a DDL, key by the table alone (one partition per
table: order kept, no parallelism inside that table).

Dead letters keep the original key and value bytes; their headers say where the
message came from and why it was rejected (``binlake.*`` names below).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence
from typing import Final

from binlake.shared.codec import avro
from binlake.shared.event.model import ChangeEvent

H_TOPIC: Final = "binlake.origin.topic"
H_PARTITION: Final = "binlake.origin.partition"
H_OFFSET: Final = "binlake.origin.offset"
H_FORMAT: Final = "binlake.format"
H_ERROR_CLASS: Final = "binlake.error.class"
H_REASON: Final = "binlake.error.reason"
H_PARSER_VERSION: Final = "binlake.parser.version"
H_REJECTED_AT: Final = "binlake.rejected.at.ms"
H_REPLAYED_FROM: Final = "binlake.replayed.from"
H_REPLAYED_ORIGIN: Final = "binlake.replayed.origin"
"""On a message ``binlake dlq replay`` re-fed: its original ``topic:partition:offset`` (read as its coordinates)."""


def event_key(event: ChangeEvent) -> bytes:
    """The record key of ``event`` (the kernel writes it with the value: ``avro.encoder().record``)."""
    return avro.encoder().key(event)


def partition_for(key: bytes | None, all_partitions: list[int], available: list[int]) -> int:
    """The unified topic's partitioner: CRC-32 of the key modulo the partition count.

    Deterministic across processes and versions (all that per-row ordering
    needs), and computed in C: aiokafka's Java-compatible murmur2 is pure
    Python and cost more per event than the Avro encoding. Only binlake writes
    the unified topic, so no other producer has to agree with it. Keyless
    records go to any available partition.
    """
    if key is None:
        return (available or all_partitions)[0]
    return all_partitions[zlib.crc32(key) % len(all_partitions)]


def dead_letter_headers(
    *, topic: str, partition: int, offset: int, format_id: str, code: str, reason: str, parser_version: str
) -> list[tuple[str, bytes]]:
    return [
        (H_TOPIC, topic.encode()),
        (H_PARTITION, str(partition).encode()),
        (H_OFFSET, str(offset).encode()),
        (H_FORMAT, format_id.encode()),
        (H_ERROR_CLASS, code.encode()),
        (H_REASON, reason.encode()),
        (H_PARSER_VERSION, parser_version.encode()),
        (H_REJECTED_AT, str(int(time.time() * 1000)).encode()),
    ]


def replayed_at(headers: Sequence[tuple[str, bytes]], topic: str) -> tuple[int, int] | None:
    """The original (partition, offset) of a message ``binlake dlq replay`` re-fed to ``topic``, else None.

    The normalizer reads such a message at those coordinates: its events keep the origin, and the
    Kafka-position ``order_key``, they would have had, so a replayed old change sorts where it happened.
    """
    for name, value in headers:
        if name == H_REPLAYED_ORIGIN:
            origin_topic, _, rest = value.decode("utf-8", "replace").rpartition(":")
            at_topic, _, partition = origin_topic.rpartition(":")
            if at_topic == topic and partition.isdigit() and rest.isdigit():
                return int(partition), int(rest)
    return None


def header_map(headers: Sequence[tuple[str, bytes]]) -> dict[str, str]:
    return {name: value.decode("utf-8", "replace") for name, value in headers}
