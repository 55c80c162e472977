package org.apache.spark.sql;

/** Compile-time stub of Spark's {@code Row} (a Scala trait): its abstract methods. */
public interface Row extends java.io.Serializable {
  int length();

  Object get(int i);

  Row copy();
}
