package org.apache.spark.sql;

/** Compile-time stub of Spark's {@code Encoder} (made in Python, {@code Encoders.row}, and handed in). */
public interface Encoder<T> extends java.io.Serializable {}
