"""The canonical change event: one changed row (or one DDL) from any vendor.

This module is the contract every parser produces and every consumer reads.
The field meanings are documented in docs/canonical-event.md; the Avro schema
(shared/event/schemas/) mirrors these classes field by field.

The classes are slotted dataclasses (equality, repr, ``dataclasses.replace``) with
an ``__init__`` of their own: mypyc compiles that one into a native constructor,
about ten times cheaper than the one ``@dataclass`` generates at import (an
event builds one per column). Treat them as immutable once built.
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


@dataclass(init=False, slots=True, unsafe_hash=True)  # hashable, as a frozen dataclass (__init__: see above)
class Column:
    """What is known of one column's type."""

    name: str
    source_type: str | None
    """The vendor's type text as given (``decimal(10,4)``, ``VARCHAR``, JDBC code...)."""
    logical_type: str
    """One of LOGICAL_TYPES."""
    precision: int | None
    scale: int | None
    inferred: bool
    """True when the vendor gave no type and the type was inferred from the value."""

    def __init__(  # noqa: PLR0917 (positional, as the dataclass constructor it replaces)
        self,
        name: str,
        source_type: str | None,
        logical_type: str,
        precision: int | None = None,
        scale: int | None = None,
        inferred: bool = False,
    ) -> None:
        self.name = name
        self.source_type = source_type
        self.logical_type = logical_type
        self.precision = precision
        self.scale = scale
        self.inferred = inferred


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


@dataclass(init=False, slots=True)
class Source:
    """Where the change comes from, including the vendor's position."""

    format: str
    db_type: str | None
    database: str | None
    schema: str | None
    table: str | None
    tenant: str | None
    binlog_file: str | None
    binlog_pos: int | None
    gtid: str | None
    scn: str | None
    checkpoint: str | None
    transaction_id: str | None
    sequence: str | None
    """The vendor's own sequence number, verbatim."""

    def __init__(  # noqa: PLR0917 (positional, as the dataclass constructor it replaces)
        self,
        format: str,
        db_type: str | None,
        database: str | None,
        schema: str | None,
        table: str | None,
        tenant: str | None = None,
        binlog_file: str | None = None,
        binlog_pos: int | None = None,
        gtid: str | None = None,
        scn: str | None = None,
        checkpoint: str | None = None,
        transaction_id: str | None = None,
        sequence: str | None = None,
    ) -> None:
        self.format = format
        self.db_type = db_type
        self.database = database
        self.schema = schema
        self.table = table
        self.tenant = tenant
        self.binlog_file = binlog_file
        self.binlog_pos = binlog_pos
        self.gtid = gtid
        self.scn = scn
        self.checkpoint = checkpoint
        self.transaction_id = transaction_id
        self.sequence = sequence


@dataclass(init=False, slots=True)
class Origin:
    """Where the vendor message was read: Kafka coordinates or file and line."""

    topic: str
    partition: int
    offset: int
    row: int
    """Index of this row inside the vendor message (0 for single-row messages)."""

    def __init__(self, topic: str, partition: int, offset: int, row: int) -> None:
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.row = row


@dataclass(init=False, slots=True)
class Ddl:
    sql: str
    kind: str
    """CREATE_TABLE, ALTER_TABLE, DROP_TABLE, RENAME_TABLE, TRUNCATE_TABLE,
    CREATE_DATABASE, DROP_DATABASE, CREATE_INDEX, DROP_INDEX, OTHER."""

    def __init__(self, sql: str, kind: str) -> None:
        self.sql = sql
        self.kind = kind


@dataclass(init=False, slots=True)
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

    def __init__(  # noqa: PLR0917 (positional, as the dataclass constructor it replaces)
        self,
        op: Op,
        source: Source,
        order_key: str,
        ts_ms: int | None,
        ingest_ts_ms: int | None,
        primary_key: list[str],
        columns: list[Column],
        before: Image | None,
        after: Image | None,
        changed_columns: list[str] | None,
        ddl: Ddl | None,
        origin: Origin,
    ) -> None:
        self.op = op
        self.source = source
        self.order_key = order_key
        self.ts_ms = ts_ms
        self.ingest_ts_ms = ingest_ts_ms
        self.primary_key = primary_key
        self.columns = columns
        self.before = before
        self.after = after
        self.changed_columns = changed_columns
        self.ddl = ddl
        self.origin = origin
