"""The changelog's rows: what a decoded event becomes (``changelog_rows``), and what a reader gets back (``expand``).

Version 2 (``layout.CHANGELOG_VERSION``, new lakes): a row holds its Kafka
coordinates, the event's *envelope* as columns (``op``, ``source`` struct,
``order_key``, ``ts_ms``, ``ingest_ts_ms``, ``primary_key``, ``ddl``,
``origin``), ``source_table`` and ``event_date`` (the UTC date of ``ts_ms``,
else of the Kafka timestamp: the changelog's partition columns by default),
the Kafka ``key`` (the row's identity: table and key values, as JSON) and
``event_avro``: the event exactly as the topic holds it (Avro single-object
encoding), from which ``columns``, ``before``, ``after`` and
``changed_columns`` are decoded where needed (``expand``; the mirror query,
and the SQL function ``binlake_event`` for users, ``spark_sink.lake.sql``).
Every value kind stays exact and an absent column stays absent: the bytes are
the normalizer's own. Writing the images as columns cost about 300 Parquet
leaves per row and most of a batch's time; the body is one binary column.

Version 1 (lakes made by earlier releases, table property
``binlake.changelog_version`` absent) holds every event field decoded
(images as ``map<string, struct>`` of the value union's branches); the sink
keeps appending version-1 rows to such a table, and ``expand`` passes them
through, so both versions feed the same mirror code.

The changelog query writes these rows (``spark_sink.changelog``); ``binlake lake verify`` makes them from
the topic to compare (``spark_sink.lake.facts``).
"""

from __future__ import annotations

from typing import Final

from pyspark.sql import Column, DataFrame, Observation
from pyspark.sql import functions as F

from binlake.spark_sink.events import decoder
from binlake.spark_sink.events.source import EVENT, KAFKA_COLUMNS, REASON, decoded_event
from binlake.spark_sink.layout import BODY, CHANGELOG_VERSION, ENVELOPE, IMAGE_FIELDS

BAD: Final = "bad"
"""An observed metric of ``changelog_rows``: unreadable records in the batch."""
RECORDS: Final = "records"
"""An observed metric of ``changelog_rows``: every record in the batch."""


def source_table(event: Column) -> Column:
    """``[tenant.]database.[schema.]table`` of an event; ``_none`` when the event names nothing."""
    source = event["source"]
    name = F.concat_ws(".", source["tenant"], source["database"], source["schema"], source["table"])
    return F.when(name == "", F.lit("_none")).otherwise(name)


def _with_reason(decoded: DataFrame, version: int = CHANGELOG_VERSION) -> DataFrame:
    """Changelog columns of every decoded record, and its ``_reason`` (NULL for a good one)."""
    event = F.col(EVENT)
    event_date = F.coalesce(F.to_date(F.timestamp_millis(event["ts_ms"])), F.to_date("_kafka_timestamp"))
    fields = [F.col(f"{EVENT}.*")]
    tail: list[Column] = []
    if version != 1:  # the envelope as columns; the images only in the body
        fields = [event[name].alias(name) for name in ENVELOPE]
        tail = [F.col("key").cast("string").alias("key"), F.col("value").alias(BODY)]
    return decoded.select(
        *KAFKA_COLUMNS,
        *fields,
        source_table(event).alias("source_table"),
        event_date.alias("event_date"),
        *tail,
        REASON,
    )


def changelog_rows(
    decoded: DataFrame, version: int = CHANGELOG_VERSION, *, observed: Observation | None = None
) -> DataFrame:
    """The good records of a decoded batch as changelog rows of ``version``.

    Version 2 needs only the envelope decoded (``decode(..., envelope=True)``); version 1 every field.
    ``observed`` counts the batch's records and its unreadable ones (metrics ``records``, ``bad``) while the
    rows are computed: the append learns whether anything needs quarantining without a pass of its own.
    """
    rows = _with_reason(decoded, version)
    if observed is not None:
        rows = rows.observe(observed, F.count(REASON).alias(BAD), F.count(F.lit(1)).alias(RECORDS))
    return rows.where(F.col(REASON).isNull()).drop(REASON)


MIRROR_FIELDS: Final = frozenset({"before", "after"})
"""What a mirror reads of an event's body (``expand``): its images (descriptors are told apart by the bytes of
their own fields, ``project.with_descriptor_id``, without decoding them)."""


_DECODED: Final = "_decoded"
BEFORE_BYTES: Final = "_before"
AFTER_BYTES: Final = "_after"


def expand(rows: DataFrame, fields: frozenset[str] = IMAGE_FIELDS) -> DataFrame:
    """Changelog rows with the event's ``fields`` as columns, whatever their version (the mirror's input).

    Version 2 rows get them (of ``columns``, ``before``, ``after``, ``changed_columns``) decoded from
    ``event_avro`` (one pass of the decoder, ``events.decoder``; the others are read past, not built);
    version-1 rows have them all already.
    """
    if BODY not in rows.columns:
        return rows
    assert fields <= IMAGE_FIELDS, fields
    decoded = decoded_event(BODY, only=None if fields == IMAGE_FIELDS else fields)
    kept = [c for c in rows.columns if c not in (BODY, "key")]
    # The body decoded into a column of its own, then its fields picked: Spark does not merge the two
    # projections (that would repeat an expensive expression), so each body is decoded once.
    images = [F.col(f"{_DECODED}.{name}").alias(name) for name in sorted(fields)]
    return rows.select(*kept, decoded.alias(_DECODED)).select(*kept, *images)


def value_images(rows: DataFrame) -> DataFrame:
    """Changelog rows with the event's images as the event's bytes hold them in ``BEFORE_BYTES`` and
    ``AFTER_BYTES`` (``decoder.IMAGES_FUNCTION``: each the bytes of an Avro map of column to value union; the
    mirror's fold), whatever the row's version: version 2 reads them from ``event_avro``, version 1 encodes
    its decoded images (``decoder.IMAGE_BYTES_FUNCTION``)."""
    if BODY not in rows.columns:
        encoded = [
            F.call_function(decoder.IMAGE_BYTES_FUNCTION, F.col(name)).alias(alias)
            for name, alias in (("before", BEFORE_BYTES), ("after", AFTER_BYTES))
        ]
        return rows.select(*rows.columns, *encoded)
    kept = [c for c in rows.columns if c != "key"]
    images = F.call_function(decoder.IMAGES_FUNCTION, F.col(BODY))
    # As ``expand``: the body read into a column of its own, then its fields picked (once per body).
    read = rows.select(*kept, images.alias(_DECODED))
    return read.select(
        *kept, F.col(f"{_DECODED}.before").alias(BEFORE_BYTES), F.col(f"{_DECODED}.after").alias(AFTER_BYTES)
    )
