"""The normalizer's native kernel (Rust, ``shared/kernel/src``, built as ``_kernel``; types in ``_kernel.pyi``).

Format-neutral work every vendor format shares, with no Python twin: typed values
from a column's declared type (``Conversion``, ``convert_image``, ``sql_type``),
the canonical event's record (``Encoder``: single-object Avro value and record
key), the JSON view of a record (``render_json``), JSON messages read with exact
numbers (``load_json``) and vendor Avro decoding (``AvroDecoder``). The formats
themselves are Python (``services/<format>/``); docs/kernel.md says what the
kernel does and how it is built.
"""
