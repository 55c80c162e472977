package org.apache.spark.sql.expressions;

import org.apache.spark.sql.Encoder;

/** Compile-time stub of Spark's {@code Aggregator} (a typed aggregate function's parts). */
public abstract class Aggregator<I, B, O> implements java.io.Serializable {
  public abstract B zero();

  public abstract B reduce(B buffer, I input);

  public abstract B merge(B one, B other);

  public abstract O finish(B buffer);

  public abstract Encoder<B> bufferEncoder();

  public abstract Encoder<O> outputEncoder();
}
