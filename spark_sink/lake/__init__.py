"""``binlake lake``: read-only tools over the sink's lake; they import ``spark_sink.layout``, never a writer.

- ``cli``: the command (``show``, ``verify``);
- ``native``: the lake read without Spark (delta-rs and DuckDB), for ``show`` and ``make demo``;
- ``show``, ``text``: what ``binlake lake show`` prints;
- ``tables``: the lake's Delta tables and their facts, read with Spark;
- ``facts``, ``verify``: the numbers ``binlake lake verify`` reads from the topic and the lake, and their
  comparison (pure Python);
- ``sql``: temporary views that decode the changelog for SQL users;
- ``errors``: ``LakeError``.

``tests/sink/test_sink_layout.py`` keeps them off ``spark_sink.changelog`` and ``spark_sink.mirror``.
"""
