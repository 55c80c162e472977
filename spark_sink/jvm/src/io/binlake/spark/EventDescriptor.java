package io.binlake.spark;

import org.apache.spark.sql.api.java.UDF1;

/**
 * An event's column descriptor id: a 64-bit hash of the bytes of its {@code primary_key} and {@code columns}.
 *
 * <p>Registered as {@code binlake_event_descriptor(value)} ({@code spark_sink/events/decoder.py}). Events
 * whose key and column list are the same have the same bytes there (the normalizer writes them), so one id
 * per descriptor, found without building any row: the mirror batch groups a table's events by it and
 * decodes the columns of one event per group. NULL where the bytes are not an event ({@link EventDecoder}).
 */
public final class EventDescriptor implements UDF1<byte[], Long> {
  private static final long serialVersionUID = 1L;
  private static final long FNV_OFFSET = 0xcbf29ce484222325L;
  private static final long FNV_PRIME = 0x100000001b3L;

  @Override
  public Long call(byte[] value) {
    int[] span = EventDecoder.descriptorSpan(value);
    if (span == null) return null;
    long hash = FNV_OFFSET; // FNV-1a: a few hundred bytes per event, a batch's handful of descriptors
    for (int i = span[0]; i < span[1]; i++) {
      hash ^= value[i] & 0xFF;
      hash *= FNV_PRIME;
    }
    return hash;
  }
}
