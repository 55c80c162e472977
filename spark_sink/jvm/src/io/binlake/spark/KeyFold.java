package io.binlake.spark;

import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.expressions.Aggregator;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.Map;
import scala.jdk.javaapi.CollectionConverters;

/**
 * What a mirror batch knows of one key: an aggregate function folding the key's events.
 *
 * <p>Registered as {@code binlake_fold_key(seq, del, desc, image, only, routes)} ({@code
 * spark_sink/mirror/fold.py}, which states the rules): per event its sequence, whether it deletes, its
 * descriptor id, its image as the event's bytes hold it ({@link EventImages}: each column's value the bytes
 * of its value union, copied only where it becomes a column's newest), the columns of the image it knows
 * ({@code only}, names as {@link ImageKey} reads them; NULL: all) and the table's routes from a logical column to its physical columns per descriptor, as {@code
 * fold.routes_text} writes them. The result: {@code struct<newest sequence, whether the newest event
 * deletes, newest DELETE's sequence, map<physical column, struct<value bytes, sequence>>>}, each physical
 * column holding the value of the newest event whose image holds its logical column (NULL where that
 * descriptor routes the column to another physical column).
 *
 * <p>The buffer is that result, so a key's events fold where they are read and only a key's fold crosses
 * the shuffle: a key changed a million times in one batch costs the memory of one row, not of a million
 * events. (Collecting a key's events and folding the list held them all at once.)
 *
 * <p>Sequences compare as Spark compares strings (UTF-8 bytes, which is code point order), an event
 * without a sequence counts for nothing. Two events of one key with one sequence are one change delivered
 * twice: a column keeps the value met first, and the key deletes if either does, which the order of the
 * events does not change.
 */
public final class KeyFold extends Aggregator<Row, Row, Row> {
  private static final long serialVersionUID = 1L;
  private static final int CACHED_ROUTES = 1024;
  private static final java.util.Map<String, Routes> ROUTES = new ConcurrentHashMap<>();
  private final Encoder<Row> result;

  /** {@code result}: {@code Encoders.row} of the result's type ({@code decoder.fold_type}). */
  public KeyFold(Encoder<Row> result) {
    this.result = result;
  }

  @Override
  public Row zero() {
    return new Folded();
  }

  @Override
  public Row reduce(Row buffer, Row event) {
    Folded folded = Folded.of(buffer);
    String seq = (String) event.get(0);
    if (seq == null) return folded;
    boolean deleting = Boolean.TRUE.equals(event.get(1));
    folded.meet(seq, deleting);
    if (deleting) folded.deleted(seq);
    java.util.Map<Names, Target[]> byLogical = routes((String) event.get(5)).of((Long) event.get(2));
    byte[] image = (byte[]) event.get(3);
    if (byLogical == null || image == null) return folded;
    Names[] only = event.get(4) == null ? null : ImageKey.names((String) event.get(4));
    int stamp = ++folded.events;
    Names probe = new Names();
    EventDecoder.entries(
        image,
        (bytes, name, length, start, end) -> {
          probe.set(bytes, name, length);
          if (only != null && !among(probe, only)) return;
          Target[] targets = byLogical.get(probe);
          if (targets == null) return; // a column no physical column stores
          for (Target target : targets) {
            folded.put(target.physical, target.routed ? bytes : null, start, end, seq, stamp);
          }
        });
    return folded;
  }

  @Override
  public Row merge(Row one, Row other) {
    return Folded.of(one).absorb(other);
  }

  @Override
  public Row finish(Row buffer) {
    return Folded.of(buffer);
  }

  @Override
  public Encoder<Row> bufferEncoder() {
    return result;
  }

  @Override
  public Encoder<Row> outputEncoder() {
    return result;
  }

  private static boolean among(Names name, Names[] names) {
    for (Names one : names) {
      if (one.equals(name)) return true;
    }
    return false;
  }

  /** Code point order, which is the order of the strings' UTF-8 bytes (Spark's string order). */
  static int compare(String a, String b) {
    int n = Math.min(a.length(), b.length());
    for (int i = 0; i < n; i++) {
      char x = a.charAt(i);
      char y = b.charAt(i);
      if (x != y) {
        boolean sx = Character.isSurrogate(x);
        if (sx != Character.isSurrogate(y)) return sx ? 1 : -1; // beyond the BMP sorts above it
        return x - y;
      }
    }
    return a.length() - b.length();
  }

  /** Whether {@code seq} is newer than {@code held} (a NULL held is older than any sequence). */
  static boolean newer(String seq, String held) {
    return held == null || compare(seq, held) > 0;
  }

  /** The fold so far, as a row of the result's type (Spark's encoder reads it as it reads any row). */
  static final class Folded implements Row {
    private static final long serialVersionUID = 1L;
    String newest;
    boolean deletes;
    String lastDelete;
    final HashMap<String, Cell> columns = new HashMap<>();
    /** Events reduced into this fold: each event's stamp on the cells it sets (see {@link #put}). */
    int events;

    /** {@code row} itself, or a fold made of a row the shuffle brought back. */
    static Folded of(Row row) {
      if (row instanceof Folded) return (Folded) row;
      return new Folded().absorb(row);
    }

    /** This fold with {@code other}'s (a {@code Folded} or a row of the result's type) folded in. */
    Folded absorb(Row other) {
      meet((String) other.get(0), Boolean.TRUE.equals(other.get(1)));
      deleted((String) other.get(2));
      if (other instanceof Folded) {
        for (java.util.Map.Entry<String, Cell> e : ((Folded) other).columns.entrySet()) {
          put(e.getKey(), e.getValue().value, e.getValue().seq);
        }
      } else if (other.get(3) != null) {
        @SuppressWarnings("unchecked")
        Map<String, Row> held = (Map<String, Row>) other.get(3);
        for (Iterator<Tuple2<String, Row>> it = held.iterator(); it.hasNext(); ) {
          Tuple2<String, Row> entry = it.next();
          put(entry._1(), entry._2().get(0), (String) entry._2().get(1));
        }
      }
      return this;
    }

    /** An event (or a fold) whose newest sequence is {@code seq}, which deletes or not. */
    void meet(String seq, boolean deleting) {
      if (seq == null) return;
      if (newer(seq, newest)) {
        newest = seq;
        deletes = deleting;
      } else if (seq.equals(newest)) {
        deletes |= deleting;
      }
    }

    /** A DELETE at {@code seq} (NULL: none). */
    void deleted(String seq) {
      if (seq != null && newer(seq, lastDelete)) lastDelete = seq;
    }

    void put(String physical, Object value, String seq) {
      Cell held = columns.get(physical);
      if (held == null) columns.put(physical, new Cell(value, seq));
      else if (seq != null && newer(seq, held.seq)) held.set(value, seq);
    }

    /**
     * An event's value (its bytes from {@code start} to {@code end} in {@code image}; NULL where {@code image}
     * is) for a column: copied only where it is newer than the column's, or the event's own (stamp {@code
     * stamp}: a column an image lists twice takes its last value, as a map of the image would).
     */
    void put(String physical, byte[] image, int start, int end, String seq, int stamp) {
      Cell held = columns.get(physical);
      if (held != null && held.stamp != stamp && !newer(seq, held.seq)) return;
      byte[] value = image == null ? null : java.util.Arrays.copyOfRange(image, start, end);
      if (held == null) {
        held = new Cell(value, seq);
        columns.put(physical, held);
      } else {
        held.set(value, seq);
      }
      held.stamp = stamp;
    }

    @Override
    public int length() {
      return 4;
    }

    @Override
    public Object get(int i) {
      switch (i) {
        case 0:
          return newest;
        case 1:
          return deletes;
        case 2:
          return lastDelete;
        case 3:
          return CollectionConverters.asScala(columns);
        default:
          throw new IndexOutOfBoundsException("the fold has 4 fields, not " + (i + 1));
      }
    }

    @Override
    public Row copy() {
      Folded copy = new Folded();
      copy.newest = newest;
      copy.deletes = deletes;
      copy.lastDelete = lastDelete;
      for (java.util.Map.Entry<String, Cell> e : columns.entrySet()) {
        copy.columns.put(e.getKey(), new Cell(e.getValue().value, e.getValue().seq));
      }
      return copy;
    }
  }

  /** A physical column's newest known value and its event's sequence, as a {@code struct<v, o>} row. */
  static final class Cell implements Row {
    private static final long serialVersionUID = 1L;
    Object value;
    String seq;
    int stamp; // the event that set it (Folded.put); 0: a fold's

    Cell(Object value, String seq) {
      set(value, seq);
    }

    void set(Object value, String seq) {
      this.value = value;
      this.seq = seq;
    }

    @Override
    public int length() {
      return 2;
    }

    @Override
    public Object get(int i) {
      if (i == 0) return value;
      if (i == 1) return seq;
      throw new IndexOutOfBoundsException("a column's fold has 2 fields, not " + (i + 1));
    }

    @Override
    public Row copy() {
      return new Cell(value, seq);
    }
  }

  private static Routes routes(String text) {
    String key = text == null ? "" : text;
    Routes found = ROUTES.get(key);
    if (found != null) return found;
    if (ROUTES.size() >= CACHED_ROUTES) ROUTES.clear(); // a long-running sink meets new plans forever
    found = Routes.parse(key);
    ROUTES.put(key, found);
    return found;
  }

  private static final class Target {
    final String physical;
    final boolean routed;

    Target(String physical, boolean routed) {
      this.physical = physical;
      this.routed = routed;
    }
  }

  /** A table's routes: descriptor id, then logical column, to the physical columns it fills. */
  private static final class Routes {
    private final HashMap<Long, HashMap<Names, Target[]>> byDescriptor = new HashMap<>();

    java.util.Map<Names, Target[]> of(Long descriptor) {
      return byDescriptor.get(descriptor == null ? 0L : descriptor);
    }

    /** {@code desc,routed,<length>:logical<length>:physical;} per route (lengths in UTF-16 units). */
    static Routes parse(String text) {
      Routes routes = new Routes();
      int p = 0;
      while (p < text.length()) {
        int comma = text.indexOf(',', p);
        long desc = Long.parseLong(text.substring(p, comma));
        boolean routed = text.charAt(comma + 1) == '1';
        int[] end = new int[1];
        java.util.List<String> names = Names.parse(text, comma + 3, end); // logical, physical
        p = end[0];
        if (names.size() != 2 || p >= text.length() || text.charAt(p) != ';') {
          throw new IllegalArgumentException("routes: two names and ';' expected at " + p);
        }
        p++;
        HashMap<Names, Target[]> byLogical = routes.byDescriptor.computeIfAbsent(desc, d -> new HashMap<>());
        Names logical = new Names(names.get(0));
        Target[] held = byLogical.getOrDefault(logical, new Target[0]);
        Target[] more = java.util.Arrays.copyOf(held, held.length + 1);
        more[held.length] = new Target(names.get(1), routed);
        byLogical.put(logical, more);
      }
      return routes;
    }
  }
}
