package io.binlake.spark;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.api.java.UDF2;

/**
 * A key's values in an image ({@link EventImages}): {@code array<binary>}, per key column the bytes of its
 * value union (the one byte {@code 00} for SQL NULL), NULL for a column the image lacks. A column an image
 * lists twice has its last value, as a map of the image would.
 *
 * <p>Registered as {@code binlake_image_key(image, keys)} ({@code spark_sink/events/decoder.py}): {@code keys}
 * the key's column names as {@code fold.names_text} writes them. The mirror batch's fold groups each table's
 * events by it. An image that is NULL or not whole gives NULL for every column.
 */
public final class ImageKey implements UDF2<byte[], String, Object[]> {
  private static final long serialVersionUID = 1L;
  private static final int CACHED = 1024;
  private static final Map<String, Names[]> KEYS = new ConcurrentHashMap<>();

  @Override
  public Object[] call(byte[] image, String keys) {
    Names[] names = names(keys);
    Object[] out = new Object[names.length];
    if (image == null) return out;
    Names probe = new Names();
    boolean whole =
        EventDecoder.entries(
            image,
            (bytes, name, length, start, end) -> {
              probe.set(bytes, name, length);
              for (int k = 0; k < names.length; k++) {
                if (names[k].equals(probe)) out[k] = java.util.Arrays.copyOfRange(bytes, start, end);
              }
            });
    return whole ? out : new Object[names.length];
  }

  static Names[] names(String text) {
    String key = text == null ? "" : text;
    Names[] found = KEYS.get(key);
    if (found != null) return found;
    if (KEYS.size() >= CACHED) KEYS.clear(); // a long-running sink meets new tables forever
    List<String> parsed = Names.parse(key, 0, null);
    found = new Names[parsed.size()];
    for (int i = 0; i < found.length; i++) found[i] = new Names(parsed.get(i));
    KEYS.put(key, found);
    return found;
  }
}
