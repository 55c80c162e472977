package scala.jdk.javaapi;

/** Compile-time stub of Scala's {@code CollectionConverters}: a Java map seen as a Scala map (no copy). */
public final class CollectionConverters {
  public static <K, V> scala.collection.mutable.Map<K, V> asScala(java.util.Map<K, V> map) {
    throw new UnsupportedOperationException("stub");
  }
}
