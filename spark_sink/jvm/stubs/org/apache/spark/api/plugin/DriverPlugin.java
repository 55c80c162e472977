package org.apache.spark.api.plugin;

/** Compile-time stub of Spark's interface (the real one is on Spark's class path at run time). */
public interface DriverPlugin {}
