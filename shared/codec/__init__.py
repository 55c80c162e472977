"""Encodings of the canonical change event: Avro (binary, single-object) and the JSON view."""
