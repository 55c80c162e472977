"""Types of the kernel, the Rust extension (shared/kernel/src/lib.rs; docs/kernel.md)."""

import datetime
from collections.abc import Callable
from typing import Any

from binlake.shared.event.values import Value

class Encoder:
    """Writes canonical events (``shared.event.model.ChangeEvent``) under one schema fingerprint (encode.rs).

    Raises TypeError for an image value that is no canonical value, OverflowError for an ``int`` beyond int64
    that is no ``BigInt``, UnicodeEncodeError for a string that is no Unicode text (a lone surrogate).
    """

    def __init__(self, fingerprint: bytes) -> None: ...
    def body(self, event: object) -> bytes:
        """The Avro body of change_event.v1 (no single-object header)."""
    def value(self, event: object) -> bytes:
        """The record value: ``C3 01``, the fingerprint, the body."""
    def key(self, event: object) -> bytes:
        """The record key: ``[database, schema, table, [key values]]`` as compact JSON."""
    def record(self, event: object) -> tuple[bytes, bytes]:
        """(key, value) at once."""
    def json(self, event: object) -> bytes:
        """The event's JSON view (``shared.codec.json_view``), one line without newline: its Avro body, rendered
        by json_view.rs. Raises ValueError if the body is outside the view's range."""
    def json_value(self, value: object) -> bytes:
        """One image value's JSON view: ``b'"1.50"'`` for ``Decimal("1.50")``, ``b'1'`` for 1, ``b'"AAE="'`` for
        ``b"\\x00\\x01"``, ``b'{"unparsed":"0000-00-00"}'``. Raises ValueError if the value is outside the
        view's range."""

class AvroDecoder:
    """Plain Avro binary decoded under one schema, compiled once (avro_decode.rs): what fastavro's
    ``schemaless_reader(fo, schema, None, return_record_name=True)`` returns, several times faster.

    ``schema_json``: the schema as JSON text (a fastavro-parsed schema, ``json.dumps(parse_schema(...))``,
    is read as fastavro reads it). Raises ValueError for a schema it cannot compile (saying why): malformed,
    a logical type fastavro converts, ``error``/``request`` types.
    """

    def __init__(self, schema_json: str) -> None: ...
    def decode(self, raw: bytes, start: int = 0) -> tuple[Any, int]:
        """(datum, the position after it) of the datum at ``start``. Raises ValueError for bytes that are not a
        datum of the schema, naming the problem and its byte offset, never the bytes."""

class Conversion:
    """A column's conversion (conversion.rs): ``conversion(value)`` is the canonical value of a vendor's raw
    value, or raises ``UnreadableValue`` (a ValueError worded without the value) or ``InexactNumber`` (a
    fast-decoded float where the digits matter: decode the message exactly).

    ``kind``: int, year, decimal, float, text, json_text, boolean, bytes, bit, date, oracle_date, time,
    local_datetime, instant, geometry, infer. ``bytes_encoding`` (bytes and bit): latin1, base64, hex, list.
    ``zone`` (instant): the source zone of wall-clock texts (UTC by default).
    """

    def __init__(self, kind: str, bytes_encoding: str | None = None, zone: datetime.tzinfo | None = None) -> None: ...
    def __call__(self, value: object) -> Value: ...
    @property
    def kind(self) -> str: ...
    @property
    def bytes_encoding(self) -> str | None: ...
    @property
    def zone(self) -> datetime.tzinfo: ...

def convert_image(
    raw: dict[str, object], converters: dict[str, Callable[[object], Value]]
) -> dict[str, Value] | tuple[str, object, BaseException]:
    """An image's values converted by their columns' conversions (undeclared columns inferred), or the first
    (name, value, exception) a conversion refused with ValueError, TypeError or ArithmeticError."""

def sql_type(
    text: str | None, dialect: str = "mysql", bytes_encoding: str = "latin1"
) -> tuple[str, int | None, int | None, str]:
    """(logical type, precision, scale, conversion kind) of a vendor's column type text (sqltype.rs)."""

def jdbc_type_name(code: int) -> str | None:
    """A type name for a java.sql.Types code."""

def describe(value: object) -> str:
    """A value's kind and size, never its content: "a string of 6 characters"."""

def bit_value(value: int) -> int:
    """``value`` if a BIT(64) holds it, else raises UnreadableValue."""

def encode_columns(columns: object) -> bytes:
    """The ``columns`` field's Avro (cached on a ``Columns`` as its ``rendered_avro``)."""

def render_json(value: bytes, fingerprint: bytes) -> bytes:
    """The JSON view of a unified-topic record value (raises ValueError for other bytes)."""

def load_json(raw: bytes) -> tuple[Any, tuple[str, int] | None]:
    """``raw`` read as JSON with exact numbers (``int``, ``Decimal``), as the standard library reads it:
    ``(value, None)``, or ``(None, (rule, position))`` where it is not JSON: ``position`` is a character
    index for one of the standard library's syntax rules, -1 for a reason without one (``"utf-8"``,
    ``"surrogate"``: a lone surrogate escape, NaN, Infinity, nesting). Raises what ``int()`` and
    ``Decimal()`` raise on a number they refuse."""

def nests_deeper(raw: bytes, limit: int) -> bool:
    """Whether a JSON text nests arrays and objects deeper than ``limit`` (brackets in strings are text;
    a quote no quote closes is an ordinary character)."""
