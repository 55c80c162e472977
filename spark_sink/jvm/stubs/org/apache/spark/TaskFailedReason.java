package org.apache.spark;

/** Compile-time stub of Spark's trait (a JVM interface; the real one is on Spark's class path at run time). */
public interface TaskFailedReason {}
