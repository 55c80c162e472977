"""Mirror column types as Arrow and Delta types, and typed values (``image_values``) as Arrow arrays.

The mirror's column types are Spark types (``typemap``, shared with the Spark mirror); the mirror without
Spark writes them with delta-rs, which takes Arrow arrays and Delta schema fields. arro3 builds the
numeric, string and binary arrays from Python values directly; decimals go through their digits (a cast
from string, exact: ``image_values`` already rounded them to the scale), dates and timestamps through
their day and microsecond counts.
"""

from __future__ import annotations

import json
from typing import Any

from arro3.core import Array, DataType
from deltalake.schema import Field as DeltaField
from deltalake.schema import Schema as DeltaSchema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)
from pyspark.sql.types import DataType as SparkType
from pyspark.sql.types import DateType as SparkDate


def arrow_type(spark_type: SparkType) -> DataType:
    """The Arrow type delta-rs writes a column of ``spark_type`` with."""
    if isinstance(spark_type, DecimalType):
        return DataType.decimal128(spark_type.precision, spark_type.scale)
    if isinstance(spark_type, TimestampType):
        return DataType.timestamp("us", tz="UTC")
    if isinstance(spark_type, TimestampNTZType):
        return DataType.timestamp("us")
    if isinstance(spark_type, SparkDate):
        return DataType.date32()
    simple: dict[type[SparkType], DataType] = {
        BooleanType: DataType.bool(),
        ByteType: DataType.int8(),
        ShortType: DataType.int16(),
        IntegerType: DataType.int32(),
        LongType: DataType.int64(),
        FloatType: DataType.float32(),
        DoubleType: DataType.float64(),
        StringType: DataType.string(),
        BinaryType: DataType.binary(),
    }
    found = simple.get(type(spark_type))
    if found is None:
        raise TypeError(f"no Arrow type for {spark_type.simpleString()}")
    return found


def array(values: list[Any], spark_type: SparkType) -> Array:
    """``values`` (``image_values``' forms, None for NULL) as an Arrow array of ``spark_type``."""
    if isinstance(spark_type, DecimalType):
        return Array(values, DataType.string()).cast(arrow_type(spark_type))
    if isinstance(spark_type, TimestampType | TimestampNTZType):
        return Array(values, DataType.int64()).cast(arrow_type(spark_type))
    if isinstance(spark_type, SparkDate):
        return Array(values, DataType.int32()).cast(DataType.date32())
    return Array(values, arrow_type(spark_type))


def delta_field(name: str, spark_type: SparkType) -> DeltaField:
    """A nullable Delta schema field (for ``alter.add_columns``)."""
    return DeltaField.from_json(json.dumps(StructField(name, spark_type).jsonValue()))


def spark_schema(schema: DeltaSchema) -> StructType:
    """A Delta table's schema (delta-rs) as Spark types: the plan's input, as ``delta.schema`` gives Spark's."""
    return StructType.fromJson(json.loads(schema.to_json()))
