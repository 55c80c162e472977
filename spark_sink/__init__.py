"""binlake's Spark sink: the unified topic -> Delta Lake, exactly once (``binlake sink``), and the lake tools.

Two Structured Streaming queries write the lake, and read-only tools read it:

- ``changelog``: query 1, Kafka -> the changelog and quarantine tables;
- ``mirror``: query 2, the changelog -> one mirror (and history) table per source table;
- ``lake``: ``binlake lake show`` / ``verify`` and the SQL views; they import no writer module;
- ``layout``: the lake's contract (folders, table properties, hidden columns) both sides share;
- ``events``: the topic's events in Spark (Kafka source, decoding, their order, the changelog's rows);
- ``checkpoint``: what the queries keep in and read from their streaming checkpoints;
- ``observe``: Prometheus metrics, the query listener, ``/metrics`` and ``/healthz``;
- ``cli``, ``job``, ``settings``, ``session``: the command, the queries' wiring, the configuration, the
  SparkSession; ``delta``, ``hadoop_files``, ``local_files``: small helpers; ``class_archive`` and
  ``jvm``: the driver JVM's class archive and binlake's Spark jar.

Nothing is imported here: ``binlake lake show`` runs without Spark.
"""
