"""The normalizer's native fast lane: common vendor messages straight to unified-topic records.

The Python parsers are the specification of every format. For the commonest
shapes of a format, a *lane* written in Rust (``shared/kernel/src``) does the
same work several times faster and returns exactly the records the Python path
would produce (record key, single-object Avro value), or ``None`` for any
message it does not read with certainty, which then goes to the Python parser
as before: DDL, unusual value spellings, rejects, other profiles. The column
types stay Python's: a lane asks its planner (``plan.py``, built on
``shared.parsing.sqltypes``) once per type map.

Plug-in point: a format gets a lane by a Rust implementation (``src/<format>.rs``
behind a ``#[pyclass]`` in ``src/lib.rs``), a factory in its home
(``services/<format>/lane.py``, with any planner in ``plan.py`` beside it, named by
its ``FormatSpec``) and a differential test (``tests/formats/<format>/test_lane_*.py``)
that compares the lane with the Python path byte for byte on the golden corpus,
generated traffic and mutated messages. ``shared.normalize.NativeCodec`` runs it.

Today: ``canal-json`` (the Canal profile), ``maxwell-json`` (row messages; its
columns are all inferred, so it needs no planner),
``drs-avro`` (flat records under a schema it decodes exactly),
``debezium-json`` (JsonConverter change events with schemas),
``debezium-smt`` (ExtractNewRecordState rows with their schema, the same planner),
``ogg-json`` (GoldenGate operations; inferred columns, as Maxwell's),
``drs-json`` / ``drs-json-c`` (MySQL row messages),
``kafkariver-canal`` (typed columns, the Canal planner), ``ckafka-v1``
(format-one DML of strings, columns inferred), OceanBase OMS's ``oms-default`` /
``oms-extend-column-type`` (untyped, or typed by ``__light_type``),
``oms-dataworks`` (typed by ``schema.column``), ``oms-shareplex`` (untyped) and ``oms-avro``
(DTS ``Record`` row changes; types from their MySQL type codes, no planner).

The extension is optional at install time (no Rust toolchain: no lane, the
Python path does everything); ``BINLAKE_FAST_LANE=false`` turns it off at run time.
"""

from binlake.shared.kernel.lanes import Lane, LaneFailed, Taken, available, lane_for, last_decline

__all__ = ["Lane", "LaneFailed", "Taken", "available", "lane_for", "last_decline"]
