package scala.collection;

/** Compile-time stub of Scala's {@code Iterator}. */
public interface Iterator<A> {
  boolean hasNext();

  A next();
}
