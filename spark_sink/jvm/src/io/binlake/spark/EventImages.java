package io.binlake.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;

/**
 * An event's images as they lie in its bytes: {@code struct<before binary, after binary>}, each the bytes of
 * the image's Avro map (blocks of a column name and its value union, then 0), NULL where the event has no
 * such image; the whole struct NULL when the bytes are not an event.
 *
 * <p>Registered as {@code binlake_event_images(value)} ({@code spark_sink/events/decoder.py}). The mirror
 * batch's fold keeps the newest value of each column of a key ({@link KeyFold}) and reads the images itself;
 * {@link ImageKey} finds a key's values in them. Carrying an image as one byte string until then spares
 * Spark a map of every event's columns to build and convert twice, and the value struct ({@code
 * binlake_decode_value}) is built only for the values that remain. Equal values have equal bytes (Avro's
 * binary encoding of one schema is canonical), so keys group by them.
 */
public final class EventImages implements UDF1<byte[], Row> {
  private static final long serialVersionUID = 1L;

  @Override
  public Row call(byte[] value) {
    Object[] images = EventDecoder.rawImages(value);
    return images == null ? null : RowFactory.create(images[0], images[1]);
  }
}
