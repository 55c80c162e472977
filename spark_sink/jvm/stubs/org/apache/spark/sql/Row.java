package org.apache.spark.sql;

/** Compile-time stub of Spark's {@code Row} (a Scala trait): only its name is used. */
public interface Row extends java.io.Serializable {}
