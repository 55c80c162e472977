package scala.collection.mutable;

/** Compile-time stub of Scala's mutable {@code Map} (what {@code CollectionConverters.asScala} gives). */
public interface Map<K, V> extends scala.collection.Map<K, V> {}
