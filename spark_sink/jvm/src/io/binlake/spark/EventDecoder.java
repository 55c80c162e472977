package io.binlake.spark;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;

/**
 * The sink's one reader of the canonical change event: single-object Avro bytes to a Spark row.
 *
 * <p>Registered as the SQL function {@code binlake_decode_event(value, fields)} by {@code
 * spark_sink/events/decoder.py}, which also declares the row's Spark type (the event schema's records as
 * structs, the value union as a struct of {@code member_<branch>} fields, every field nullable). {@code
 * fields} names the event fields to build, comma-separated; the others are read past without building
 * anything and come back NULL. Written for the one released schema, {@code change_event.v1.avsc}: the
 * message must carry its fingerprint, and a new schema version needs a reader here before it is released
 * (a test compares the fingerprint and the schema's field list with this class).
 *
 * <p>Anything it cannot read is NULL (the sink then quarantines the record with a reason): another header
 * or fingerprint, a body that ends early, bytes left after the event, a union branch or enum symbol the
 * schema does not have, a negative length, text that is not UTF-8.
 *
 * <p>Why not spark-avro's {@code from_avro}: it builds Avro's generic records and then Spark rows from them,
 * about 24 us of CPU per event; this reads the bytes once into the rows, 3 to 4 times faster (bench/README.md).
 */
public final class EventDecoder implements UDF2<byte[], String, Row> {
  private static final long serialVersionUID = 1L;

  /** The event's fields in the schema's order (the row's order). */
  static final String[] FIELDS = {
    "op", "source", "order_key", "ts_ms", "ingest_ts_ms", "primary_key", "columns", "before", "after",
    "changed_columns", "ddl", "origin"
  };

  private static final int PRIMARY_KEY = 5; // then columns: the descriptor's two fields, side by side
  private static final String[] OPS = {"INSERT", "UPDATE", "DELETE", "SNAPSHOT", "DDL", "TRUNCATE", "UPSERT"};
  private static final int SOURCE_FIELDS = 13;
  private static final int SOURCE_LONG = 7; // binlog_pos: the one nullable long among the source's strings
  private static final int VALUE_BRANCHES = 12; // the value union's branches after "null"
  private static final byte[] HEADER = {
    (byte) 0xC3, 0x01, (byte) 0x8A, (byte) 0xC8, 0x70, 0x17, (byte) 0xC0, (byte) 0xBB, 0x6E, 0x09
  };
  private static final Map<String, boolean[]> WANTED = new ConcurrentHashMap<>();

  /** The v1 schema's single-object header: {@code C3 01} and its CRC-64-AVRO fingerprint. */
  public static byte[] header() {
    return HEADER.clone();
  }

  /** The event's field names, in the row's order. */
  public static String[] fields() {
    return FIELDS.clone();
  }

  @Override
  public Row call(byte[] value, String fields) {
    if (!framed(value)) return null;
    boolean[] wanted = WANTED.computeIfAbsent(fields, EventDecoder::parse);
    try {
      Reader in = new Reader(value, HEADER.length);
      Object[] row = new Object[FIELDS.length];
      for (int i = 0; i < FIELDS.length; i++) {
        row[i] = in.field(i, wanted[i]);
      }
      return in.atEnd() ? RowFactory.create(row) : null;
    } catch (Corrupt | IndexOutOfBoundsException | CharacterCodingException e) {
      return null;
    }
  }

  /**
   * Where {@code primary_key} and {@code columns} lie in {@code value}: {start, end}, or null when the bytes
   * are not an event of the schema up to there ({@link EventDescriptor}).
   */
  static int[] descriptorSpan(byte[] value) {
    if (!framed(value)) return null;
    try {
      Reader in = new Reader(value, HEADER.length);
      for (int i = 0; i < PRIMARY_KEY; i++) in.field(i, false);
      int start = in.position();
      in.field(PRIMARY_KEY, false);
      in.field(PRIMARY_KEY + 1, false); // columns
      return new int[] {start, in.position()};
    } catch (Corrupt | IndexOutOfBoundsException | CharacterCodingException e) {
      return null;
    }
  }

  /**
   * The event's images as they lie in its bytes ({@link EventImages}): {before, after}, each the bytes of the
   * image's Avro map (blocks of a column name and its value union, then 0) or null where the event has no
   * such image; null when the bytes are not an event of the schema up to its images.
   */
  static Object[] rawImages(byte[] value) {
    if (!framed(value)) return null;
    try {
      Reader in = new Reader(value, HEADER.length);
      for (int i = 0; i < 7; i++) in.field(i, false); // op .. columns
      Object before = in.nullable() ? in.rawImage() : null;
      Object after = in.nullable() ? in.rawImage() : null;
      return new Object[] {before, after};
    } catch (Corrupt | IndexOutOfBoundsException | CharacterCodingException e) {
      return null;
    }
  }

  /** What {@link #entries} shows of each entry of an image: where its name's UTF-8 and its value's bytes lie. */
  interface Entries {
    void entry(byte[] image, int nameStart, int nameLength, int valueStart, int valueEnd);
  }

  /**
   * Each entry of an image's bytes ({@link #rawImages}), in order, to {@code visit}; false (after the entries
   * read so far) when the bytes are not one whole image.
   */
  static boolean entries(byte[] image, Entries visit) {
    try {
      Reader in = new Reader(image, 0);
      for (long n = in.blockCount(); n != 0; n = in.blockCount()) {
        for (long j = 0; j < n; j++) {
          int length = in.length();
          int name = in.p;
          in.p += length;
          int start = in.p;
          in.value(false);
          visit.entry(image, name, length, start, in.p);
        }
      }
      return in.atEnd();
    } catch (Corrupt | IndexOutOfBoundsException | CharacterCodingException e) {
      return false;
    }
  }

  /** One value union's bytes as the value struct {@link #call} builds for it (NULL for SQL NULL and for bytes
   * that are not one whole value). */
  static Row value(byte[] bytes) {
    if (bytes == null) return null;
    try {
      Reader in = new Reader(bytes, 0);
      Row row = in.value(true);
      return in.atEnd() ? row : null;
    } catch (Corrupt | IndexOutOfBoundsException | CharacterCodingException e) {
      return null;
    }
  }

  /** Whether {@code value} starts with the released schema's single-object header. */
  private static boolean framed(byte[] value) {
    if (value == null || value.length < HEADER.length) return false;
    for (int i = 0; i < HEADER.length; i++) {
      if (value[i] != HEADER[i]) return false;
    }
    return true;
  }

  private static boolean[] parse(String fields) {
    boolean[] wanted = new boolean[FIELDS.length];
    for (String name : fields.split(",")) {
      int at = Arrays.asList(FIELDS).indexOf(name.trim());
      if (at < 0) {
        throw new IllegalArgumentException("the change event has no field " + name + ": one of " + Arrays.toString(FIELDS));
      }
      wanted[at] = true;
    }
    return wanted;
  }

  /** A body that does not follow the schema (caught in {@link #call}: the row is NULL). */
  private static final class Corrupt extends Exception {
    private static final long serialVersionUID = 1L;

    Corrupt(String why) {
      super(why, null, false, false);
    }
  }

  /** One event's bytes and a position in them; every read advances it, building values only if {@code keep}. */
  private static final class Reader {
    private final byte[] b;
    private int p;
    private CharsetDecoder utf8; // made for the first text that is not ASCII: most events have none

    Reader(byte[] bytes, int start) {
      b = bytes;
      p = start;
    }

    boolean atEnd() {
      return p == b.length;
    }

    int position() {
      return p;
    }

    Object field(int i, boolean keep) throws Corrupt, CharacterCodingException {
      switch (i) {
        case 0: {
          long op = varlong();
          if (op < 0 || op >= OPS.length) throw new Corrupt("op symbol " + op);
          return keep ? OPS[(int) op] : null;
        }
        case 1:
          return source(keep);
        case 2:
          return string(keep);
        case 3:
        case 4:
          return nullable() ? longValue(keep) : null;
        case 5:
          return strings(keep);
        case 6:
          return columns(keep);
        case 7:
        case 8:
          return nullable() ? image(keep) : null;
        case 9:
          return nullable() ? strings(keep) : null;
        case 10: {
          if (!nullable()) return null;
          String sql = string(keep);
          String kind = string(keep);
          return keep ? RowFactory.create(sql, kind) : null;
        }
        case 11: {
          String topic = string(keep);
          int partition = intValue();
          long offset = varlong();
          int row = intValue();
          return keep ? RowFactory.create(topic, partition, offset, row) : null;
        }
        default:
          throw new IllegalStateException("field " + i);
      }
    }

    private Row source(boolean keep) throws Corrupt, CharacterCodingException {
      Object[] out = new Object[SOURCE_FIELDS];
      out[0] = string(keep); // format: the one required field
      for (int j = 1; j < SOURCE_FIELDS; j++) {
        if (nullable()) {
          out[j] = j == SOURCE_LONG ? longValue(keep) : string(keep);
        }
      }
      return keep ? RowFactory.create(out) : null;
    }

    private List<String> strings(boolean keep) throws Corrupt, CharacterCodingException {
      List<String> out = keep ? new ArrayList<>() : null;
      for (long n = blockCount(); n != 0; n = blockCount()) {
        for (long j = 0; j < n; j++) {
          String s = string(keep);
          if (keep) out.add(s);
        }
      }
      return out;
    }

    private List<Row> columns(boolean keep) throws Corrupt, CharacterCodingException {
      List<Row> out = keep ? new ArrayList<>() : null;
      for (long n = blockCount(); n != 0; n = blockCount()) {
        for (long j = 0; j < n; j++) {
          String name = string(keep);
          String sourceType = nullable() ? string(keep) : null;
          String logicalType = string(keep);
          Integer precision = nullable() ? intValue() : null;
          Integer scale = nullable() ? intValue() : null;
          boolean inferred = bool();
          if (keep) out.add(RowFactory.create(name, sourceType, logicalType, precision, scale, inferred));
        }
      }
      return out;
    }

    private Map<String, Row> image(boolean keep) throws Corrupt, CharacterCodingException {
      // In the order the image lists its columns: the same bytes make the same map, entry for entry.
      Map<String, Row> out = keep ? new LinkedHashMap<>() : null;
      for (long n = blockCount(); n != 0; n = blockCount()) {
        for (long j = 0; j < n; j++) {
          String column = string(keep);
          Row value = value(keep);
          if (keep) out.put(column, value);
        }
      }
      return out;
    }

    /** An image read past (its columns' names checked as UTF-8, its values as the union's), as its bytes. */
    private byte[] rawImage() throws Corrupt, CharacterCodingException {
      int start = p;
      for (long n = blockCount(); n != 0; n = blockCount()) {
        for (long j = 0; j < n; j++) {
          checkedText();
          value(false);
        }
      }
      return Arrays.copyOfRange(b, start, p);
    }

    /** A value union: NULL for SQL NULL, else a struct with the one member of its branch set. */
    private Row value(boolean keep) throws Corrupt, CharacterCodingException {
      long branch = varlong();
      if (branch == 0) return null;
      if (branch < 0 || branch > VALUE_BRANCHES) throw new Corrupt("value branch " + branch);
      Object member;
      switch ((int) branch) {
        case 1: member = bool(); break;
        case 2: member = varlong(); break;
        case 3: member = float64(); break;
        case 4: member = string(keep); break;
        case 5: member = bytes(keep); break;
        case 6: // BigInteger, Decimal, Unparsed: a record of one string
        case 7:
        case 12: {
          String text = string(keep);
          member = keep ? RowFactory.create(text) : null;
          break;
        }
        case 8: {
          int days = intValue();
          member = keep ? RowFactory.create(days) : null;
          break;
        }
        default: { // Time, LocalDateTime, Instant: a record of one long
          long micros = varlong();
          member = keep ? RowFactory.create(micros) : null;
        }
      }
      if (!keep) return null;
      Object[] members = new Object[VALUE_BRANCHES];
      members[(int) branch - 1] = member;
      return RowFactory.create(members);
    }

    /** A ["null", T] union's branch: true when T follows. */
    private boolean nullable() throws Corrupt {
      long branch = varlong();
      if (branch == 0) return false;
      if (branch == 1) return true;
      throw new Corrupt("nullable branch " + branch);
    }

    /** An array's or map's next block size (0: the end); a negative count is followed by the block's bytes. */
    private long blockCount() throws Corrupt {
      long n = varlong();
      if (n < 0) {
        varlong();
        n = -n;
      }
      if (n > b.length - p) throw new Corrupt("block of " + n + " items in " + (b.length - p) + " bytes");
      return n;
    }

    private Long longValue(boolean keep) throws Corrupt {
      long v = varlong();
      return keep ? v : null;
    }

    private int intValue() throws Corrupt {
      long v = varlong();
      if (v != (int) v) throw new Corrupt("int out of range: " + v);
      return (int) v;
    }

    private boolean bool() throws Corrupt {
      byte v = b[p++];
      if (v != 0 && v != 1) throw new Corrupt("boolean byte " + v);
      return v == 1;
    }

    private double float64() {
      long bits = 0;
      for (int s = 0; s < 64; s += 8) {
        bits |= (b[p++] & 0xFFL) << s;
      }
      return Double.longBitsToDouble(bits);
    }

    private int length() throws Corrupt {
      long n = varlong();
      if (n < 0 || n > b.length - p) throw new Corrupt("length " + n + " with " + (b.length - p) + " bytes left");
      return (int) n;
    }

    private byte[] bytes(boolean keep) throws Corrupt {
      int n = length();
      byte[] out = keep ? Arrays.copyOfRange(b, p, p + n) : null;
      p += n;
      return out;
    }

    /** A string read past, checked as UTF-8 (built only where it is not ASCII, the rare case). */
    private void checkedText() throws Corrupt, CharacterCodingException {
      int at = p;
      int n = length();
      for (int i = p; i < p + n; i++) {
        if (b[i] < 0) {
          p = at;
          string(true);
          return;
        }
      }
      p += n;
    }

    private String string(boolean keep) throws Corrupt, CharacterCodingException {
      int n = length();
      String out = null;
      if (keep) {
        boolean ascii = true;
        for (int i = p; i < p + n && ascii; i++) ascii = b[i] >= 0;
        // ASCII is valid UTF-8 and Latin-1 alike, and Latin-1 makes a compact string without checks.
        if (ascii) {
          out = new String(b, p, n, StandardCharsets.ISO_8859_1);
        } else {
          if (utf8 == null) utf8 = StandardCharsets.UTF_8.newDecoder(); // reports malformed input, never replaces
          out = utf8.decode(ByteBuffer.wrap(b, p, n)).toString();
        }
      }
      p += n;
      return out;
    }

    /** An Avro int or long: zigzag varint. */
    private long varlong() throws Corrupt {
      long raw = 0;
      for (int shift = 0; shift < 70; shift += 7) {
        byte x = b[p++];
        raw |= (long) (x & 0x7F) << shift;
        if (x >= 0) return (raw >>> 1) ^ -(raw & 1);
      }
      throw new Corrupt("varint longer than 10 bytes");
    }
  }
}
