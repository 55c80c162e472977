package scala.collection;

/** Compile-time stub of Scala's {@code Seq} (how Spark hands an array to a Java UDF): length and index. */
public interface Seq<A> {
  int length();

  A apply(int i);
}
