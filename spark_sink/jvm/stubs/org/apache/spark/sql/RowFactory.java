package org.apache.spark.sql;

/** Compile-time stub of Spark's {@code RowFactory}. */
public class RowFactory {
  public static Row create(Object... values) {
    throw new UnsupportedOperationException("stub");
  }
}
