package scala.collection;

/** Compile-time stub of Scala's {@code Map} (how Spark hands a map to a Java UDF): its entries. */
public interface Map<K, V> {
  Iterator<scala.Tuple2<K, V>> iterator();
}
