"""Query 2, the mirror query: the changelog -> one mirror (silver) table per source table, its history.

- ``batch``: one micro-batch of the mirror query (new changelog rows);
- ``apply``: a batch's row and control events applied to every table it touches, step by step;
- ``merge``: one table's row events -> its mirror: floors, the fold per key, the MERGE (the mirror's rules);
- ``control_events``: TRUNCATE and DDL events as instructions per table;
- ``plan``, ``typemap``, ``schema``: which physical column holds each value, its Spark type, and the
  mirror's schema created or evolved for a batch;
- ``project``, ``fold``: events in the mirror's columns, and the fold per key of many tables at once;
- ``tombstones``: the deleted keys (``deleted_keys/``) that keep late events out;
- ``history``: the SCD type 2 tables;
- ``current_state``: a table as the changelog says it is now (merge on read: mirror + the changelog's
  tail, by ``merge``'s rules).

The changelog query runs ``apply`` itself with ``mirrors=inline``.
"""
