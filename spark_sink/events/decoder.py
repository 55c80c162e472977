"""The canonical event's decoding in Spark: SQL function ``binlake_decode_event(value, fields)``.

The function is ``io.binlake.spark.EventDecoder`` of the sink's jar (``spark_sink/jvm``): single-object
Avro bytes of the released event schema to one struct (``event_type``), NULL where the bytes are not such
an event. ``fields`` (comma-separated) names the event fields it builds; the others are read past and come
back NULL, which is what makes an envelope-only decoding cheap. Every Spark session the sink builds
registers it (``register``); so does ``lake.sql.register`` in a user's session (which needs the jar:
``spark.jars`` with ``binlake.spark_sink.jvm.JAR``).

The struct's shape is the one spark-avro gave the same schema, so lakes, SQL and the mirror's conversions
read the same columns: records are structs, enums and strings strings, ``["null", T]`` a nullable T, and
the value union a struct of one nullable member per branch (``member_long``, ``member_Decimal``...,
``typemap``), NULL for SQL NULL.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import Any, Final

from pyspark.sql import Column, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    BooleanType,
    DataType,
    DoubleType,
    IntegerType,
    LongType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from binlake.shared.codec import avro
from binlake.shared.errors import BinlakeError
from binlake.spark_sink import jvm

FUNCTION: Final = "binlake_decode_event"
DECODER_CLASS: Final = "io.binlake.spark.EventDecoder"
DESCRIPTOR_FUNCTION: Final = "binlake_event_descriptor"
DESCRIPTOR_CLASS: Final = "io.binlake.spark.EventDescriptor"
FOLD_FUNCTION: Final = "binlake_fold_key"
"""A mirror batch's fold of one key's events (``mirror.fold``): ``io.binlake.spark.KeyFold``."""
FOLD_CLASS: Final = "io.binlake.spark.KeyFold"
IMAGES_FUNCTION: Final = "binlake_event_images"
"""An event's images as its bytes hold them (``io.binlake.spark.EventImages``): what the fold reads."""
IMAGE_BYTES_FUNCTION: Final = "binlake_image_bytes"
"""A decoded image as those bytes (``io.binlake.spark.ImageBytes``): a version-1 changelog's images."""
IMAGE_KEY_FUNCTION: Final = "binlake_image_key"
"""A key's values in such an image, as their unions' bytes (``io.binlake.spark.ImageKey``)."""
VALUE_FUNCTION: Final = "binlake_decode_value"
"""One value union's bytes as the value struct (``io.binlake.spark.ValueDecoder``)."""
VALUE_BYTES_FUNCTION: Final = "binlake_value_bytes"
"""A value struct as its union's bytes (``io.binlake.spark.ValueBytes``): a version-1 changelog's images."""
_PRIMITIVES: Final[dict[str, DataType]] = {
    "string": StringType(),
    "long": LongType(),
    "int": IntegerType(),
    "boolean": BooleanType(),
    "double": DoubleType(),
    "bytes": BinaryType(),
}


class DecoderMissing(BinlakeError):
    """The session cannot load the event decoder: the sink's jar is not on its class path."""


def _spark_type(schema: Any, named: dict[str, DataType]) -> DataType:
    """An Avro (sub)schema as spark-avro types it (stable union identifiers); ``named`` collects records."""
    if isinstance(schema, str):
        if schema in _PRIMITIVES:
            return _PRIMITIVES[schema]
        return named[schema]
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        if len(branches) == 1:
            return _spark_type(branches[0], named)
        members = []
        for branch in branches:
            name = branch if isinstance(branch, str) else branch.get("name", branch["type"])
            members.append(StructField(f"member_{name}", _spark_type(branch, named), True))
        return StructType(members)
    kind = schema["type"]
    if kind == "record":
        record = StructType([StructField(f["name"], _spark_type(f["type"], named), True) for f in schema["fields"]])
        named[schema["name"]] = record
        return record
    if kind == "enum":
        named[schema["name"]] = StringType()
        return StringType()
    if kind == "array":
        return ArrayType(_spark_type(schema["items"], named), True)
    if kind == "map":
        return MapType(StringType(), _spark_type(schema["values"], named), True)
    return _spark_type(kind, named)


@functools.cache
def event_type() -> StructType:
    """The Spark type of a decoded event (every field nullable: a field not asked for is NULL); built once, as
    every decoding step of every batch asks for it."""
    decoded = _spark_type(avro.schema_json(), {})
    assert isinstance(decoded, StructType)
    return decoded


def event_fields() -> list[str]:
    """The event's fields in the schema's order."""
    return list(event_type().fieldNames())


def value_type() -> DataType:
    """The value union's struct: one member per branch (``member_long``, ``member_Decimal``...)."""
    image = event_type()["after"].dataType
    assert isinstance(image, MapType), image
    return image.valueType


def images_type() -> StructType:
    """What ``binlake_event_images`` returns: each image the bytes of its Avro map (blocks of a column's name
    and its value union, then 0)."""
    return StructType([StructField("before", BinaryType(), True), StructField("after", BinaryType(), True)])


@functools.cache
def fold_input_type() -> StructType:
    """What ``binlake_fold_key`` aggregates: per event its sequence, whether it deletes, its descriptor id,
    its image (``images_type``'s bytes), the image's columns it knows (``mirror.fold.names_text``; NULL: all)
    and the table's routes (``mirror.fold.routes_text``)."""
    return StructType(
        [
            StructField("seq", StringType(), True),
            StructField("del", BooleanType(), True),
            StructField("desc", LongType(), True),
            StructField("image", BinaryType(), True),
            StructField("only", StringType(), True),
            StructField("routes", StringType(), True),
        ]
    )


@functools.cache
def fold_type() -> StructType:
    """What ``binlake_fold_key`` returns: the newest sequence, whether it deletes, the newest DELETE's sequence,
    and per physical column its newest value (its union's bytes) and that event's sequence."""
    column = StructType([StructField("v", BinaryType(), True), StructField("o", StringType(), True)])
    return StructType(
        [
            StructField("newest", StringType(), True),
            StructField("deletes", BooleanType(), False),
            StructField("last_delete", StringType(), True),
            StructField("columns", MapType(StringType(), column, True), True),
        ]
    )


def register(spark: SparkSession) -> None:
    """Register the jar's functions in ``spark`` (its streaming queries' sessions inherit them):
    ``binlake_decode_event``, ``binlake_event_descriptor``, the fold's ``binlake_fold_key``,
    ``binlake_event_images``, ``binlake_image_key``, ``binlake_decode_value``, and for a version-1 changelog
    ``binlake_value_bytes`` and ``binlake_image_bytes``."""
    try:
        spark.udf.registerJavaFunction(FUNCTION, DECODER_CLASS, event_type())
        spark.udf.registerJavaFunction(DESCRIPTOR_FUNCTION, DESCRIPTOR_CLASS, LongType())
        spark.udf.registerJavaFunction(IMAGES_FUNCTION, "io.binlake.spark.EventImages", images_type())
        spark.udf.registerJavaFunction(VALUE_FUNCTION, "io.binlake.spark.ValueDecoder", value_type())
        spark.udf.registerJavaFunction(VALUE_BYTES_FUNCTION, "io.binlake.spark.ValueBytes", BinaryType())
        spark.udf.registerJavaFunction(IMAGE_BYTES_FUNCTION, "io.binlake.spark.ImageBytes", BinaryType())
        spark.udf.registerJavaFunction(IMAGE_KEY_FUNCTION, "io.binlake.spark.ImageKey", ArrayType(BinaryType()))
        _register_fold(spark)
    except Exception as error:  # py4j wraps the JVM's ClassNotFoundException: say what to do instead
        if DECODER_CLASS not in str(error) and "ClassNotFound" not in str(error):
            raise
        raise DecoderMissing(
            f"this Spark session cannot load {DECODER_CLASS}: add {jvm.JAR} to spark.jars (build it with "
            "`python -m binlake.spark_sink.jvm.build`, which needs a JDK)"
        ) from error


def _register_fold(spark: SparkSession) -> None:
    """``binlake_fold_key``: an ``Aggregator`` (``functions.udaf``), which PySpark registers only through the JVM."""
    jvm_ = spark._jvm
    assert jvm_ is not None
    sql = jvm_.org.apache.spark.sql
    rows = sql.Encoders.row
    result = rows(sql.types.DataType.fromJson(fold_type().json()))
    inputs = rows(sql.types.DataType.fromJson(fold_input_type().json()))
    aggregate = sql.functions.udaf(jvm_.io.binlake.spark.KeyFold(result), inputs)  # FOLD_CLASS
    spark._jsparkSession.udf().register(FOLD_FUNCTION, aggregate)


def decoded(value: str, fields: Iterable[str] | None = None) -> Column:
    """The event struct of the single-object bytes in column ``value``: ``fields`` built (all when None), the
    rest NULL; NULL when the bytes are not an event of the released schema."""
    names = event_fields() if fields is None else [f for f in event_fields() if f in set(fields)]
    return F.call_function(FUNCTION, F.col(value), F.lit(",".join(names)))


def descriptor_id(value: str) -> Column:
    """The column descriptor id of the event in column ``value``: a hash of the bytes of its ``primary_key``
    and ``columns`` (equal descriptors, equal ids), found without decoding them; NULL for bytes that are not an
    event."""
    return F.call_function(DESCRIPTOR_FUNCTION, F.col(value))
