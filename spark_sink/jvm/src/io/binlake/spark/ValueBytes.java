package io.binlake.spark;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF1;

/**
 * A value struct (one member per branch of the value union, at most one set) as the bytes of its value
 * union, as an event's body holds it: for a changelog of version 1, whose images are decoded structs
 * ({@link ImageBytes}). {@link ValueDecoder} reads them back.
 *
 * <p>Registered as {@code binlake_value_bytes(value)} ({@code spark_sink/events/decoder.py}). NULL (SQL NULL)
 * is the null branch, the one byte {@code 00}.
 */
public final class ValueBytes implements UDF1<Row, byte[]> {
  private static final long serialVersionUID = 1L;
  private static final int BRANCHES = 12;

  @Override
  public byte[] call(Row value) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(16);
    write(out, value);
    return out.toByteArray();
  }

  /** {@code value}'s union bytes, written to {@code out}. */
  static void write(ByteArrayOutputStream out, Row value) {
    int branch = 0;
    if (value != null) {
      for (int j = 0; j < BRANCHES && branch == 0; j++) {
        if (value.get(j) != null) branch = j + 1;
      }
    }
    varlong(out, branch);
    if (branch == 0) return;
    Object member = value.get(branch - 1);
    switch (branch) {
      case 1:
        out.write(Boolean.TRUE.equals(member) ? 1 : 0);
        break;
      case 2:
        varlong(out, ((Number) member).longValue());
        break;
      case 3: {
        long bits = Double.doubleToRawLongBits(((Number) member).doubleValue());
        for (int s = 0; s < 64; s += 8) out.write((int) (bits >>> s) & 0xFF);
        break;
      }
      case 4:
        bytes(out, ((String) member).getBytes(StandardCharsets.UTF_8));
        break;
      case 5:
        bytes(out, (byte[]) member);
        break;
      case 6: // BigInteger, Decimal, Unparsed: a record of one string
      case 7:
      case 12:
        bytes(out, ((String) ((Row) member).get(0)).getBytes(StandardCharsets.UTF_8));
        break;
      default: // a date (days, an int) or Time, LocalDateTime, Instant (micros, a long): a record of one number
        varlong(out, ((Number) ((Row) member).get(0)).longValue());
    }
  }

  static void bytes(ByteArrayOutputStream out, byte[] data) {
    varlong(out, data.length);
    out.write(data, 0, data.length);
  }

  /** An Avro int or long: zigzag varint. */
  static void varlong(ByteArrayOutputStream out, long v) {
    long z = (v << 1) ^ (v >> 63);
    while ((z & ~0x7FL) != 0) {
      out.write((int) ((z & 0x7F) | 0x80));
      z >>>= 7;
    }
    out.write((int) z);
  }
}
