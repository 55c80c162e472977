"""CRC-64-AVRO schema fingerprints, as the Avro specification defines them."""

from __future__ import annotations

from typing import Final

_EMPTY: Final = 0xC15D213AA4D7A795


def _table() -> list[int]:
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY & -(fp & 1))
        table.append(fp)
    return table


_TABLE: Final = _table()


def crc64_avro(data: bytes) -> int:
    """The 64-bit Rabin fingerprint of ``data`` (the schema's parsing canonical form)."""
    fp = _EMPTY
    for byte in data:
        fp = (fp >> 8) ^ _TABLE[(fp ^ byte) & 0xFF]
    return fp


def fingerprint_bytes(canonical_form: str) -> bytes:
    """The 8 little-endian bytes single-object encoding puts after ``C3 01``."""
    return crc64_avro(canonical_form.encode("utf-8")).to_bytes(8, "little")
