"""The unified topic's events as Spark reads them, for both queries and ``binlake lake verify``.

- ``source``: the Kafka source, and the decoding of the Avro single-object messages;
- ``order``: the sink's total order of a table's events (the *sequence*);
- ``rows``: what an event becomes in the changelog, and what a reader gets back from a changelog row.
"""
