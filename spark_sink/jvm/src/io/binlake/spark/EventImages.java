package io.binlake.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * An event's images with their values left as bytes: {@code struct<before, after>}, each a {@code map<column,
 * binary>} holding each column's value union as the event's bytes hold it (NULL where the event has no
 * such image; a SQL NULL value is the one byte {@code 00}, the union's null branch).
 *
 * <p>Registered as {@code binlake_event_images(value)} ({@code spark_sink/events/decoder.py}). The mirror
 * batch's fold keeps the newest value of each column of a key (``binlake_fold_key``): carrying it as bytes
 * until then, and building the value struct ({@code binlake_decode_value}) only for the values that remain,
 * spares the fold a struct of twelve members per value of every event. Equal values have equal bytes (Avro's
 * binary encoding of one schema is canonical), so keys group by them.
 */
public final class EventImages implements UDF1<byte[], Row> {
  private static final long serialVersionUID = 1L;

  @Override
  public Row call(byte[] value) {
    Object[] images = EventDecoder.valueImages(value);
    return images == null ? null : RowFactory.create(images[0], images[1]);
  }
}
