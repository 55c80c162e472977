package io.binlake.spark;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.Map;

/**
 * A decoded image ({@code map<column, value struct>}) as the bytes an event's body holds it in ({@link
 * EventImages}): for a changelog of version 1, whose rows hold their images decoded, so that the mirror's
 * fold reads both layouts alike. One block of entries, each a column name and its value union ({@link
 * ValueBytes}), then 0; NULL for NULL.
 *
 * <p>Registered as {@code binlake_image_bytes(image)} ({@code spark_sink/events/decoder.py}).
 */
public final class ImageBytes implements UDF1<Map<String, Row>, byte[]> {
  private static final long serialVersionUID = 1L;

  @Override
  public byte[] call(Map<String, Row> image) {
    if (image == null) return null;
    ByteArrayOutputStream entries = new ByteArrayOutputStream(128);
    int n = 0;
    for (Iterator<Tuple2<String, Row>> it = image.iterator(); it.hasNext(); n++) {
      Tuple2<String, Row> entry = it.next();
      ValueBytes.bytes(entries, entry._1().getBytes(StandardCharsets.UTF_8));
      ValueBytes.write(entries, entry._2());
    }
    ByteArrayOutputStream out = new ByteArrayOutputStream(entries.size() + 8);
    if (n > 0) {
      ValueBytes.varlong(out, n);
      byte[] body = entries.toByteArray();
      out.write(body, 0, body.length);
    }
    out.write(0);
    return out.toByteArray();
  }
}
