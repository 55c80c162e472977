"""Query 1, the changelog query: the unified topic (Kafka) -> the changelog and quarantine Delta tables.

- ``batch``: one micro-batch, exactly once: decode, [mirrors inline,] append, quarantine, statistics;
- ``table``: the changelog and quarantine tables: creation, the commit a batch made, the rows it appended;
- ``dedup``: which of a batch's Kafka records the changelog holds already (a replay's).

What a changelog row holds is ``spark_sink.events.rows``; the wiring of the query is ``spark_sink.job``.
"""
