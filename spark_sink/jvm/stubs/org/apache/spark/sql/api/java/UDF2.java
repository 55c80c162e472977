package org.apache.spark.sql.api.java;

/** Compile-time stub of Spark's two-argument Java UDF interface. */
public interface UDF2<T1, T2, R> extends java.io.Serializable {
  R call(T1 t1, T2 t2) throws Exception;
}
