package io.binlake.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;

/**
 * One value union's bytes ({@link EventImages}, {@link ValueBytes}) as the value struct the event decoder
 * builds ({@link EventDecoder}): NULL for SQL NULL and for bytes that are not one whole value.
 *
 * <p>Registered as {@code binlake_decode_value(bytes)} ({@code spark_sink/events/decoder.py}).
 */
public final class ValueDecoder implements UDF1<byte[], Row> {
  private static final long serialVersionUID = 1L;

  @Override
  public Row call(byte[] bytes) {
    return EventDecoder.value(bytes);
  }
}
