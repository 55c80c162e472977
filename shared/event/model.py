"""The canonical change event: one changed row (or one DDL) from any vendor.

This module is the contract every parser produces and every consumer reads.
The field meanings are documented in docs/canonical-event.md; the Avro schema
(shared/event/schemas/) mirrors these classes field by field.

The classes are plain slotted dataclasses so that parsers can build them cheaply
(hundreds of thousands per second) and orjson can render them without copying.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from mypy_extensions import mypyc_attr

from binlake.shared.event.values import Image

Op = Literal["INSERT", "UPDATE", "DELETE", "SNAPSHOT", "DDL", "TRUNCATE", "UPSERT"]
OPS: Final[tuple[Op, ...]] = ("INSERT", "UPDATE", "DELETE", "SNAPSHOT", "DDL", "TRUNCATE", "UPSERT")
ROW_OPS: Final[frozenset[str]] = frozenset({"INSERT", "UPDATE", "DELETE", "SNAPSHOT", "UPSERT"})

LOGICAL_TYPES: Final[frozenset[str]] = frozenset(
    {
        "boolean",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint64",
        "integer",
        "decimal",
        "float32",
        "float64",
        "string",
        "json",
        "enum",
        "set",
        "bytes",
        "bit",
        "date",
        "time",
        "datetime",
        "timestamp",
        "year",
        "interval",
        "geometry",
        "unknown",
    }
)
"""Logical column types; see docs/canonical-event.md for each one's value kind."""


@dataclass(slots=True, frozen=True)
class Column:
    """What is known of one column's type."""

    name: str
    source_type: str | None
    """The vendor's type text as given (``decimal(10,4)``, ``VARCHAR``, JDBC code...)."""
    logical_type: str
    """One of LOGICAL_TYPES."""
    precision: int | None = None
    scale: int | None = None
    inferred: bool = False
    """True when the vendor gave no type and the type was inferred from the value."""


@mypyc_attr(native_class=False)  # mypyc compiles no subclass of a builtin container or int
class Columns(list[Column]):
    """The column descriptors of one table shape, shared by all its events.

    Parsers build one per distinct type map and reuse it, so the encoder may
    cache its Avro (``rendered_avro``); treat it as immutable once built.
    """

    __slots__ = ("rendered_avro",)

    def __init__(self, columns: Iterable[Column] = ()) -> None:
        super().__init__(columns)
        self.rendered_avro: bytes | None = None


@dataclass(slots=True)
class Source:
    """Where the change comes from, including the vendor's position."""

    format: str
    db_type: str | None
    database: str | None
    schema: str | None
    table: str | None
    tenant: str | None = None
    binlog_file: str | None = None
    binlog_pos: int | None = None
    gtid: str | None = None
    scn: str | None = None
    checkpoint: str | None = None
    transaction_id: str | None = None
    sequence: str | None = None
    """The vendor's own sequence number, verbatim."""


@dataclass(slots=True)
class Origin:
    """Where the vendor message was read: Kafka coordinates or file and line."""

    topic: str
    partition: int
    offset: int
    row: int
    """Index of this row inside the vendor message (0 for single-row messages)."""


@dataclass(slots=True)
class Ddl:
    sql: str
    kind: str
    """CREATE_TABLE, ALTER_TABLE, DROP_TABLE, RENAME_TABLE, TRUNCATE_TABLE,
    CREATE_DATABASE, DROP_DATABASE, CREATE_INDEX, DROP_INDEX, OTHER."""


@dataclass(slots=True)
class ChangeEvent:
    """One canonical change event."""

    op: Op
    source: Source
    order_key: str
    ts_ms: int | None
    ingest_ts_ms: int | None
    primary_key: list[str]
    columns: list[Column]
    before: Image | None
    after: Image | None
    changed_columns: list[str] | None
    ddl: Ddl | None
    origin: Origin
