package io.binlake.spark;

import java.util.HashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;
import scala.Tuple2;
import scala.collection.Iterator;
import scala.collection.Map;
import scala.collection.Seq;

/**
 * What a mirror batch knows of one key: the fold of the key's events, in one call per key.
 *
 * <p>Registered as {@code binlake_fold_key(events, routes)} ({@code spark_sink/mirror/fold.py}, which
 * states the rules). {@code events}: the key's events of the batch, each {@code struct<seq, del, desc,
 * image>} (in any order: the sequence orders them). {@code routes}: the table's routes from a logical
 * column to its physical columns, per descriptor, as {@code fold.routes_text} writes them. The result:
 * {@code struct<newest sequence, whether the newest event deletes, newest DELETE's sequence, map<physical
 * column, struct<value, sequence>>>}, each physical column holding the value of the newest event whose image
 * holds its logical column (NULL where that descriptor routes the column to another physical column).
 *
 * <p>Sequences compare as Spark compares strings (UTF-8 bytes, which is code point order), an event
 * without a sequence counts for nothing, and equal sequences keep the first event (two events of one key
 * with one sequence are one change delivered twice).
 */
public final class KeyFold implements UDF2<Seq<Row>, String, Row> {
  private static final long serialVersionUID = 1L;
  private static final int CACHED_ROUTES = 1024;
  private static final java.util.Map<String, Routes> ROUTES = new ConcurrentHashMap<>();

  @Override
  public Row call(Seq<Row> events, String routesText) {
    if (events == null) return null;
    Routes routes = routes(routesText == null ? "" : routesText);
    String newest = null;
    boolean deletes = false;
    String lastDelete = null;
    HashMap<String, Object[]> columns = new HashMap<>();
    for (int i = 0, n = events.length(); i < n; i++) {
      Row event = events.apply(i);
      String seq = (String) event.get(0);
      if (seq == null) continue;
      boolean del = Boolean.TRUE.equals(event.get(1));
      if (newest == null || compare(seq, newest) > 0) {
        newest = seq;
        deletes = del;
      }
      if (del && (lastDelete == null || compare(seq, lastDelete) > 0)) lastDelete = seq;
      java.util.Map<String, Target[]> byLogical = routes.of((Long) event.get(2));
      @SuppressWarnings("unchecked")
      Map<String, Row> image = (Map<String, Row>) event.get(3);
      if (byLogical == null || image == null) continue;
      for (Iterator<Tuple2<String, Row>> it = image.iterator(); it.hasNext(); ) {
        Tuple2<String, Row> entry = it.next();
        Target[] targets = byLogical.get(entry._1());
        if (targets == null) continue; // a column no physical column stores
        for (Target target : targets) {
          Object[] held = columns.get(target.physical);
          if (held == null || compare(seq, (String) held[1]) > 0) {
            columns.put(target.physical, new Object[] {target.routed ? entry._2() : null, seq});
          }
        }
      }
    }
    HashMap<String, Row> out = new HashMap<>(columns.size() * 2);
    for (java.util.Map.Entry<String, Object[]> e : columns.entrySet()) {
      out.put(e.getKey(), RowFactory.create(e.getValue()[0], e.getValue()[1]));
    }
    return RowFactory.create(newest, deletes, lastDelete, out);
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

  private static Routes routes(String text) {
    Routes found = ROUTES.get(text);
    if (found != null) return found;
    if (ROUTES.size() >= CACHED_ROUTES) ROUTES.clear(); // a long-running sink meets new plans forever
    found = Routes.parse(text);
    ROUTES.put(text, found);
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
    private final HashMap<Long, HashMap<String, Target[]>> byDescriptor = new HashMap<>();

    java.util.Map<String, Target[]> of(Long descriptor) {
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
        p = comma + 3;
        String[] names = new String[2];
        for (int k = 0; k < 2; k++) {
          int colon = text.indexOf(':', p);
          int length = Integer.parseInt(text.substring(p, colon));
          names[k] = text.substring(colon + 1, colon + 1 + length);
          p = colon + 1 + length;
        }
        if (text.charAt(p) != ';') throw new IllegalArgumentException("routes: ';' expected at " + p);
        p++;
        HashMap<String, Target[]> byLogical = routes.byDescriptor.computeIfAbsent(desc, d -> new HashMap<>());
        Target[] held = byLogical.getOrDefault(names[0], new Target[0]);
        Target[] more = java.util.Arrays.copyOf(held, held.length + 1);
        more[held.length] = new Target(names[1], routed);
        byLogical.put(names[0], more);
      }
      return routes;
    }
  }
}
