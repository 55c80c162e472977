package scala;

/** Compile-time stub of Scala's {@code Tuple2} (a map entry). */
public class Tuple2<A, B> {
  public A _1() {
    throw new UnsupportedOperationException("stub");
  }

  public B _2() {
    throw new UnsupportedOperationException("stub");
  }
}
