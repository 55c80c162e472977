"""What the sink keeps in and reads from a query's streaming checkpoint.

- ``app_ids``: each query's Delta transaction app id, born with its checkpoint;
- ``offset_log``: where each micro-batch starts and ends (Structured Streaming's offset log);
- ``writer_lake``: where the queries start on a lake the writers without Spark of earlier releases wrote.
"""
