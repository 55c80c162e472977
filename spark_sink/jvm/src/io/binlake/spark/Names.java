package io.binlake.spark;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A column name as UTF-8 bytes, compared with the bytes of a name in an image ({@link EventDecoder#entries})
 * without building a string of it: the fold meets every column of every event.
 *
 * <p>A probe is one reused instance {@link #set} to each name met; the names it is looked up among are made
 * from their strings.
 */
final class Names {
  private byte[] bytes;
  private int start;
  private int length;
  private int hash;

  Names() {}

  Names(String name) {
    byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
    set(utf8, 0, utf8.length);
  }

  /** This probe, now the name in {@code bytes} from {@code start}, {@code length} bytes long. */
  Names set(byte[] bytes, int start, int length) {
    this.bytes = bytes;
    this.start = start;
    this.length = length;
    int h = 1;
    for (int i = start; i < start + length; i++) h = 31 * h + bytes[i];
    hash = h;
    return this;
  }

  /** A copy that keeps its own bytes (a probe's bytes are the image's). */
  Names copy() {
    Names out = new Names();
    out.set(java.util.Arrays.copyOfRange(bytes, start, start + length), 0, length);
    return out;
  }

  @Override
  public int hashCode() {
    return hash;
  }

  @Override
  public boolean equals(Object other) {
    if (!(other instanceof Names)) return false;
    Names o = (Names) other;
    return hash == o.hash
        && java.util.Arrays.equals(bytes, start, start + length, o.bytes, o.start, o.start + o.length);
  }

  @Override
  public String toString() {
    return new String(bytes, start, length, StandardCharsets.UTF_8);
  }

  /** The names of {@code <length>:name} entries (a name's length in UTF-16 units), as {@code fold.names_text}
   * writes them; {@code text} from {@code from} up to the first character that starts no entry. */
  static List<String> parse(String text, int from, int[] end) {
    List<String> out = new ArrayList<>();
    int p = from;
    while (p < text.length() && Character.isDigit(text.charAt(p))) {
      int colon = text.indexOf(':', p);
      int n = Integer.parseInt(text.substring(p, colon));
      out.add(text.substring(colon + 1, colon + 1 + n));
      p = colon + 1 + n;
    }
    if (end != null) end[0] = p;
    return out;
  }
}
