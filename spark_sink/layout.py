"""The lake's contract: where the sink's tables live and the names inside them that readers rely on.

Everything here is a plain name (no Spark, no Delta), shared by the writers (``spark_sink.changelog``,
``spark_sink.mirror``) and the readers (``spark_sink.lake``, ``binlake lake show`` without Spark): a name
changed here changes the lake, so an existing lake keeps being read only if it stays.

The lake (``SinkSettings.lake_uri``) holds

- ``changelog/``: one row per event (``CHANGELOG_VERSION``; version 1 lakes lack ``PROP_VERSION``);
- ``quarantine/``: the records that are not readable events;
- ``deleted_keys/``: every mirror's tombstones (columns ``TOMBSTONE_TABLE``, ``TOMBSTONE_KEY``, ``ORDER_KEY``);
- ``mirror/<dir>/``: a source table as it is now, plus the hidden columns ``HIDDEN``;
- ``history/<dir>/``: every version of a source table's rows (``VALID_FROM``... ``KNOWN``), where configured;
- ``tombstones/<dir>/``: a table's deleted keys, as releases before ``deleted_keys/`` kept them (read only).

``<dir>`` is the source table's name made path-safe (``table_dir``, or a configured name), so the
per-table tables name their source table in the table property ``PROP_SOURCE``.
"""

from __future__ import annotations

from typing import Final

# ---------------------------------------------------------------- folders

CHANGELOG_DIR: Final = "changelog"
QUARANTINE_DIR: Final = "quarantine"
DELETED_KEYS_DIR: Final = "deleted_keys"
"""The lake's one tombstone table (``spark_sink.mirror.tombstones``); ``tombstones/<dir>/`` are earlier releases'."""
MIRROR_DIR: Final = "mirror"
TOMBSTONES_DIR: Final = "tombstones"
HISTORY_DIR: Final = "history"
KINDS: Final = (("mirror", MIRROR_DIR), ("tombstones", TOMBSTONES_DIR), ("history", HISTORY_DIR))
"""The per-source-table tables: their kind and the folder holding one ``<dir>/`` per source table."""


def table_dir(source_table: str) -> str:
    """A mirror table's folder name: the source table name with path-unsafe characters replaced."""
    safe = "".join(ch if ch.isalnum() or ch in "._-$" else "_" for ch in source_table)
    return safe.strip(".") or "_unnamed"


# ---------------------------------------------------------------- table properties

PROP_SOURCE: Final = "binlake.source_table"
"""The source table a mirror, history or legacy tombstone table belongs to."""
PROP_KEY: Final = "binlake.primary_key"
"""A mirror's key columns (JSON list), fixed when it was created."""
PROP_FALLBACKS: Final = "binlake.fallbacks"
"""A mirror's fallback columns (``<column>__<type>``, JSON: physical -> logical column)."""
PROP_TRUNCATED: Final = "binlake.truncated_at"
"""The sequence of the last TRUNCATE a mirror applied; row events not newer are ignored."""
PROP_TRUNCATED_TS: Final = "binlake.truncated_ts_ms"
"""That TRUNCATE's ``ts_ms`` (empty when it had none): a history version of a late event closes then."""
PROP_WIDTH: Final = "binlake.width"
"""A keyed mirror made by an earlier release: its physical columns when ``COLUMN_ORDER`` was added (the width
of its rows written before, whose ``WIDTH`` is NULL)."""
PROP_VERSION: Final = "binlake.changelog_version"
"""The changelog's layout (``CHANGELOG_VERSION``); absent: version 1."""
CHANGE_FEED: Final = "delta.enableChangeDataFeed"
"""On: Delta records which rows each version added (appends cost nothing more); the current-state reads
(``spark_sink.mirror.current_state``) read the changelog's tail by it."""
PROP_FEED_FROM: Final = "binlake.change_feed_from"
"""The first version of a changelog whose feed was enabled after its creation (absent: version 0)."""

# ---------------------------------------------------------------- the changelog

CHANGELOG_VERSION: Final = 2
"""The changelog layout new lakes get: the envelope as columns, the event's bytes in ``BODY``
(``spark_sink.events.rows``). Version 1 holds every event field decoded."""
BODY: Final = "event_avro"
"""Version 2: the event's Avro single-object bytes, as on the topic."""
ENVELOPE: Final = ("op", "source", "order_key", "ts_ms", "ingest_ts_ms", "primary_key", "ddl", "origin")
"""Version 2: the event's fields kept as columns (the rest, ``IMAGE_FIELDS``, only in ``BODY``)."""
IMAGE_FIELDS: Final = frozenset({"columns", "before", "after", "changed_columns"})
"""The event's per-row payload: what a version-2 changelog keeps in the Avro body only."""
STATS_COLUMNS: Final = "delta.dataSkippingStatsColumns"
STATS: Final = ("_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp", "order_key", "ts_ms")
"""The columns a new changelog keeps per-file statistics of (``STATS_COLUMNS``): the Kafka coordinates (the
"not yet written" read skips files by them), the order and the event time. Statistics of every column cost
about a fifth of an append."""
COORDINATES: Final = ["_kafka_topic", "_kafka_partition", "_kafka_offset"]
"""A changelog or quarantine row's Kafka record: no two changelog rows share one."""
EMPTYING_DDL: Final = frozenset({"TRUNCATE_TABLE", "DROP_TABLE"})
"""DDL kinds that empty a table as a TRUNCATE does (its mirror stays, empty)."""

# ---------------------------------------------------------------- hidden columns of mirrors and history

ORDER_KEY: Final = "_binlake_order_key"
"""The sequence (``spark_sink.events.order``) of the event a row holds."""
OP: Final = "_binlake_op"
ORIGIN: Final = "_binlake_origin"
"""A key-less mirror row's origin (``topic#partition#offset#row``): appended once per origin."""
COLUMN_ORDER: Final = "_binlake_column_order"
"""A keyed mirror row's columns whose sequence is not the row's (map: physical column -> the sequence of the
event that last set it, or of the DELETE or TRUNCATE that emptied it; "" for never known)."""
WIDTH: Final = "_binlake_width"
"""How many physical columns a keyed mirror had when the row was last written: columns added after that
were never known to the row (sequence ""). NULL in rows of an earlier release: ``PROP_WIDTH`` holds it."""
HIDDEN: Final = frozenset({ORDER_KEY, OP, ORIGIN, COLUMN_ORDER, WIDTH})

DELTA_LOG: Final = "_delta_log"
COMMITTED_LOG_FILE: Final = r"^\d{20}\.(json|checkpoint\b.*)$|^_last_checkpoint$"
"""The names (a regular expression) of a Delta log's commit and checkpoint files: a table folder whose
log holds none is no table (a creation killed before its first commit), whatever else it holds."""

VALID_FROM: Final = "valid_from"
VALID_TO: Final = "valid_to"
IS_CURRENT: Final = "is_current"
KNOWN: Final = "_binlake_known"
"""A history version's columns its event knew."""

# ---------------------------------------------------------------- the tombstone table (deleted_keys/)

TOMBSTONE_TABLE: Final = "source_table"
TOMBSTONE_KEY: Final = "key"
TOMBSTONE_DELETED_AT: Final = "deleted_at"
"""When the sink recorded the delete (its retention counts from then); NULL in rows of an earlier release."""
