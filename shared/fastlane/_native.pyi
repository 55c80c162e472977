"""Types of the Rust extension (shared/fastlane/src/lib.rs)."""

from collections.abc import Callable
from typing import Any, TypeAlias

KIND_CODES: dict[str, int]
"""Column kind name -> code, the one definition (values.rs) that plan.py is checked against."""
DECLINE_STAGES: list[str]
"""The names ``last_decline`` returns (decline.rs)."""

def last_decline() -> str:
    """Where the last lane on this thread stopped: its reason for declining the message it returned None for."""

def render_json(value: bytes, fingerprint: bytes) -> bytes:
    """The JSON view of a unified-topic record value (raises ValueError for other bytes)."""

class LaneFailed(Exception):
    """A lane panicked on a message (a bug in the lane): the Python parser reads it instead."""

class CanalLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        db_type: str,
        planner: Callable[[list[str], list[str | None]], tuple[list[str], list[int], bytes] | None],
        instant: Callable[[str], int | None],
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class MaxwellLane:
    def __init__(self, fingerprint: bytes, format_id: str, db_type: str) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class DrsAvroLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        db_type: str,
        fields: list[tuple[str, str]],
        planner: Callable[[list[str], list[str | None]], tuple[list[str], list[int], bytes] | None],
        instant: Callable[[str], int | None],
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class DebeziumLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        primary_key: list[str],
        planner: Callable[[bytes], tuple[list[str], list[int], list[int], bytes] | None],
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class DebeziumSmtLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        primary_key: list[str],
        db_type: str | None,
        topic_tables: dict[str, str],
        source_table: str | None,
        planner: Callable[[bytes], tuple[list[str], list[int], list[int], bytes] | None],
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class OggLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        db_type: str,
        database_is_schema: bool,
        wall_clock: Callable[[str], int | None] | None,
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class DrsJsonLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        db_type: str,
        delete_row_in: str,
        planner: Callable[[list[str], list[str | None]], tuple[list[str], list[int], bytes] | None],
        instant: Callable[[str], int | None],
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class KafkaRiverLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        db_type: str,
        planner: Callable[[list[str], list[str | None]], tuple[list[str], list[int], bytes] | None],
        instant: Callable[[str], int | None],
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class CKafkaLane:
    def __init__(
        self, fingerprint: bytes, format_id: str, db_type: str, time: Callable[[str], int | None] | None
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class OmsLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        planner: Callable[[list[str], list[str | None]], tuple[list[str], list[int], bytes] | None],
        instant: Callable[[str], int | None] | None,
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

class OmsAvroLane:
    def __init__(
        self,
        fingerprint: bytes,
        format_id: str,
        codes: list[tuple[int, str, str]],
        instant: Callable[[str], int | None] | None,
    ) -> None: ...
    def parse(
        self, raw: bytes, topic: str, partition: int, offset: int
    ) -> tuple[str, str, int | None, list[bytes]] | None: ...
    def planned(self) -> int: ...

def detect_format(raw: bytes) -> str | None: ...
def auto_format(raw: bytes) -> str | None: ...

class AvroShape:
    """An Avro schema in ``avro_shape.rs``'s notation: bodies read into Python values (records as tuples,
    enums as indexes), skipped fields unbuilt; None for a body fastavro must read."""

    def __init__(self, notation: str) -> None: ...
    def read_many(self, bodies: list[bytes], offset: int) -> list[tuple[Any, ...] | None]: ...

class TailReader:
    """Reads batches of changelog bodies of the current schema (``tail_read.rs``): envelopes only, images
    read again by the fold."""

    def __init__(
        self,
        notation: str,
        fields: list[str],
        kinds: list[str],
        ops: list[tuple[str, bool]],
        header: bytes,
        separator: str,
    ) -> None: ...
    def read(self, tables: list[str], bodies: list[bytes]) -> Tail | None: ...

FoldAnswer: TypeAlias = tuple[
    list[list[Any]], list[tuple[list[Any], list[str | None]] | None], list[str], list[bool], list[str | None], list[str]
]
"""``Tail.fold``'s: per key column its values, per physical column (values, sequences) or None for a key
column, sequences, deletes, last deletes, tombstone key texts."""

class Tail:
    """A batch read by ``TailReader.read`` (``tail_fold.rs``)."""

    def descriptors(self) -> list[tuple[bytes, list[str]]]: ...
    def firsts(self) -> list[tuple[str, int, str]]: ...
    def controls(self) -> list[tuple[str, str, str, int | None, str | None, str | None]]: ...
    def row_counts(self) -> list[tuple[str, int]]: ...
    def summary(self, table: str) -> tuple[list[str], list[int | None]]: ...
    def bodies(self, table: str) -> tuple[list[bytes], list[int]]: ...
    def fold(
        self,
        table: str,
        routes: list[list[tuple[str, int, bool]] | None],
        targets: list[tuple[str, int, int]],
        converters: list[Any],
        key_index: list[int],
        key_names: list[str],
        truncated_at: str | None,
    ) -> (
        tuple[list[list[Any]], list[tuple[list[Any], list[str | None]] | None], list[str], list[bool], list[str | None]]
        | None
    ): ...
    def keyless(
        self,
        table: str,
        routes: list[list[tuple[str, int, bool]] | None],
        targets: list[tuple[str, int, int]],
        converters: list[Any],
        truncated_at: str | None,
    ) -> tuple[list[list[Any]], list[str], list[str], list[str]] | None: ...
