"""The unified topic as a streaming DataFrame, and the decoding of its Avro single-object messages.

Each message is ``C3 01`` + the 8-byte CRC-64-AVRO fingerprint of the writer
schema + the Avro body. ``decode`` checks the header, picks the released schema
version whose fingerprint matches (``shared/event/schemas``) and decodes the
body with the sink's decoder (``events.decoder``, the SQL function
``binlake_decode_event``). Anything else gets a ``_reason`` and goes to the
quarantine table; nothing is dropped.
"""

from __future__ import annotations

import json
from typing import Final

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType, StructField, StructType, TimestampType

from binlake.shared.codec import avro
from binlake.shared.config.settings import KafkaSettings
from binlake.spark_sink.events import decoder
from binlake.spark_sink.events.pem import ssl_options
from binlake.spark_sink.layout import IMAGE_FIELDS
from binlake.spark_sink.settings import SinkSettings

EVENT: Final = "_event"
REASON: Final = "_reason"
KAFKA_COLUMNS: Final = ("_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp")
KAFKA_SCHEMA: Final = StructType(
    [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
)
"""The rows of Spark's Kafka source (what ``read_stream`` yields and ``decode`` reads)."""


def kafka_options(kafka: KafkaSettings) -> dict[str, str]:
    """KafkaSettings as ``kafka.*`` options of Spark's Kafka source."""
    options = {
        "kafka.bootstrap.servers": kafka.bootstrap_servers,
        "kafka.security.protocol": kafka.security_protocol,
        "kafka.isolation.level": "read_committed",
    }
    if kafka.security_protocol.startswith("SASL_"):
        assert kafka.sasl_password is not None
        module = (
            "org.apache.kafka.common.security.plain.PlainLoginModule"
            if kafka.sasl_mechanism == "PLAIN"
            else "org.apache.kafka.common.security.scram.ScramLoginModule"
        )
        user = json.dumps(kafka.sasl_username)
        password = json.dumps(kafka.sasl_password.get_secret_value())
        options["kafka.sasl.mechanism"] = kafka.sasl_mechanism
        options["kafka.sasl.jaas.config"] = f"{module} required username={user} password={password};"
    if kafka.security_protocol.endswith("SSL"):
        options.update(ssl_options(kafka))
    return options


def read_stream(
    spark: SparkSession, settings: SinkSettings, kafka: KafkaSettings, *, starting_offsets: str | None = None
) -> DataFrame:
    """The unified topic's records; a new checkpoint starts at ``starting_offsets`` (Spark's JSON of offsets per
    partition), else at ``settings.starting_offsets``."""
    reader = spark.readStream.format("kafka").options(**kafka_options(kafka))
    reader = reader.option("subscribe", settings.topic)
    reader = reader.option("startingOffsets", starting_offsets or settings.starting_offsets)
    reader = reader.option("failOnDataLoss", "true")
    if settings.max_offsets_per_trigger is not None:
        reader = reader.option("maxOffsetsPerTrigger", str(settings.max_offsets_per_trigger))
    return reader.load()


def decoded_event(value: str = "value", *, envelope: bool = False, only: frozenset[str] | None = None) -> Column:
    """The event struct of the single-object bytes in column ``value`` (``events.decoder``): every field, its
    envelope (``envelope``: no ``IMAGE_FIELDS``) or ``only`` some fields built, the others NULL."""
    if only is not None:
        return decoder.decoded(value, only)
    if envelope:
        return decoder.decoded(value, [f for f in decoder.event_fields() if f not in IMAGE_FIELDS])
    return decoder.decoded(value)


def decode(raw: DataFrame, *, envelope: bool = False) -> DataFrame:
    """Kafka records -> Kafka coordinates, key, value, ``_event`` (struct or null) and ``_reason`` (null if good).

    With ``envelope`` the event struct leaves out ``IMAGE_FIELDS`` (the changelog query of ``mirrors=follow``
    needs no more: the images travel in the Avro body, decoded by the mirror query).
    """
    known = F.array(*[F.lit(avro.fingerprint(v)) for v in avro.released_versions()])
    frame = raw.select(
        F.col("topic").alias("_kafka_topic"),
        F.col("partition").alias("_kafka_partition"),
        F.col("offset").alias("_kafka_offset"),
        F.col("timestamp").alias("_kafka_timestamp"),
        "key",
        "value",
    ).withColumn(EVENT, decoded_event(envelope=envelope))
    fingerprint = F.substring("value", 3, 8)
    reason = (
        F.when(F.col("value").isNull(), F.lit("null value (tombstone)"))
        .when(F.length("value") < 10, F.lit("shorter than the single-object header"))
        .when(F.substring("value", 1, 2) != F.lit(avro.MAGIC), F.lit("no Avro single-object marker C3 01"))
        .when(
            ~F.array_contains(known, fingerprint),
            F.concat(F.lit("unknown schema fingerprint "), F.lower(F.hex(fingerprint))),
        )
        # The decoder yields NULL for a body it cannot read; op, order_key and origin are required fields,
        # so a readable event always has them.
        .when(
            F.col(EVENT).isNull()
            | F.col(EVENT)["op"].isNull()
            | F.col(EVENT)["order_key"].isNull()
            | F.col(EVENT)["origin"].isNull(),
            F.lit("corrupt Avro body"),
        )
    )
    return frame.withColumn(REASON, reason)
