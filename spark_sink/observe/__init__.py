"""What the sink tells about itself: Prometheus metrics and health.

- ``metrics``: every ``binlake_sink_*`` metric, fed per micro-batch and per query progress;
- ``listener``: the StreamingQueryListener that feeds the query-level metrics;
- ``server``: ``/metrics``, ``/healthz`` and ``/readyz`` from a background thread;
- ``batch_stats``: rows per table and op and event times of a batch's fresh changelog rows;
- ``steps``: wall time per step of a micro-batch.
"""
