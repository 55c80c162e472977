"""Turning a vendor's raw row images into typed canonical images.

A ``RowTypes`` holds the declared column types of one table shape (built once
per distinct type map and cached by the parsers), and converts raw images.
Columns an image holds without a declared type get their type inferred from the
value and are reported with ``inferred=True``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable
from typing import Any, Final

from binlake.shared.event.model import Column, Columns
from binlake.shared.event.values import Image, Value
from binlake.shared.kernel._kernel import convert_image
from binlake.shared.parsing.binary import BytesEncoding
from binlake.shared.parsing.errors import BAD_FIELD, BAD_VALUE, INCONSISTENT, RejectError, value_problem
from binlake.shared.parsing.sqltypes import Converter, Dialect, SqlType, inferred_logical, sql_type
from binlake.shared.parsing.temporal import UTC

_INFERRED_SHAPES_LIMIT: Final = 4096


class RowTypes:
    """Declared column types of a table shape, and image conversion under them."""

    __slots__ = ("_with_inferred", "columns", "converters", "types")

    def __init__(self, declared: Iterable[tuple[str, SqlType]]) -> None:
        self.types: dict[str, SqlType] = dict(declared)
        self.converters: dict[str, Converter] = {name: t.convert for name, t in self.types.items()}
        self.columns = Columns(
            Column(name, t.text, t.logical, t.precision, t.scale, t.text is None) for name, t in self.types.items()
        )
        self._with_inferred: dict[tuple[tuple[str, ...], tuple[type, ...]], Columns] = {}
        """Declared plus inferred columns, by the undeclared names and their value types."""

    @classmethod
    def from_texts(
        cls,
        texts: Iterable[tuple[str, str | None]],
        dialect: Dialect = "mysql",
        bytes_encoding: BytesEncoding = "latin1",
        zone: _dt.tzinfo = UTC,
    ) -> RowTypes:
        """Declared types from type texts; a column whose text is None is left undeclared (inferred)."""
        return cls((name, sql_type(text, dialect, bytes_encoding, zone)) for name, text in texts if text is not None)

    def convert(self, raw: Any, what: str) -> Image:
        """A typed image from a raw JSON object; raises RejectError on a bad value (the kernel's loop:
        ``convert_image``)."""
        if not isinstance(raw, dict):
            raise RejectError(BAD_FIELD, f"{what} must be a JSON object of column values")
        out = convert_image(raw, self.converters)
        if isinstance(out, dict):
            return out
        name, value, exc = out
        problem = value_problem(exc, value)  # never the value itself: reasons carry no row data
        raise RejectError(BAD_VALUE, f"{what} column {name!r} ({self._type_text(name)}): {problem}") from None

    def _type_text(self, name: str) -> str:
        t = self.types.get(name)
        return "untyped" if t is None or t.text is None else f"type {t.text}"

    def columns_for(self, *images: Image | None) -> list[Column]:
        """Declared columns plus an inferred column for every undeclared name in the images."""
        declared = self.types.keys()
        for image in images:
            if image and not image.keys() <= declared:
                break
        else:
            return self.columns  # the common case: every column is declared (a C-level set check)
        # Each undeclared name with its first non-null value across the images.
        present = [image for image in images if image]
        extra: dict[str, Value]
        if not declared and len(present) == 1:
            extra = present[0]  # all undeclared, one image: itself (only read below)
        else:
            extra = {}
            for image in present:
                for name, value in image.items():
                    if name not in declared and extra.get(name) is None:
                        extra[name] = value
        if not extra:
            return self.columns
        # Untyped vendors (Maxwell, GoldenGate) take this path for every row: the
        # descriptors are built once per shape and shared, so the codecs' caches
        # on Columns apply. A value's exact type decides its inferred logical type.
        key = (tuple(extra), tuple(map(type, extra.values())))
        cached = self._with_inferred.get(key)
        if cached is None:
            inferred = [Column(name, None, inferred_logical(value), None, None, True) for name, value in extra.items()]
            if len(self._with_inferred) >= _INFERRED_SHAPES_LIMIT:
                self._with_inferred.clear()
            cached = self._with_inferred[key] = Columns(self.columns + inferred)
        return cached


UNTYPED: Final = RowTypes(())
"""For vendors that send no types: every column inferred."""


def require_key_columns(primary_key: list[str], image: Image | None, what: str) -> None:
    """Reject a row whose identifying image lacks a primary key column.

    A change whose key values are unknown cannot be applied to a mirror table,
    so it is dead-lettered with the names missing rather than passed on.
    """
    if not primary_key or image is None:
        return
    missing = [name for name in primary_key if name not in image]
    if missing:
        raise RejectError(
            INCONSISTENT, f"primary key column(s) {missing} named by the message are not in the {what} image"
        )


def overlay(base: Image, changes: Image) -> Image:
    """``base`` with ``changes`` applied: the full prior row from a partial ``old``."""
    merged = dict(base)
    merged.update(changes)
    return merged
