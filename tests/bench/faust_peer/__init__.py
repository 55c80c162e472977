"""faust-streaming as a peer of binlake's normalizer runtime, kept for measurement only.

``python -m tests.bench.faust_peer --format canal-json --input-topic T ...`` runs
one faust worker whose agent parses a vendor topic with binlake's parser and
writes canonical Avro events (and dead letters) with faust's
``processing_guarantee="exactly_once"``. It is not the service runtime: see
docs/faust-comparison.md for what it measured and why binlake keeps
``shared.kafka.runtime``.
"""
