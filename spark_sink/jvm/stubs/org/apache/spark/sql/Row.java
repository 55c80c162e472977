package org.apache.spark.sql;

/** Compile-time stub of Spark's {@code Row} (a Scala trait): the methods binlake's functions call. */
public interface Row extends java.io.Serializable {
  Object get(int i);

  boolean isNullAt(int i);
}
