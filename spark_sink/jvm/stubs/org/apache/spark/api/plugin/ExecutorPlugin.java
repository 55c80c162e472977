package org.apache.spark.api.plugin;

import java.util.Map;
import org.apache.spark.TaskFailedReason;

/** Compile-time stub of Spark's interface (the real one is on Spark's class path at run time). */
public interface ExecutorPlugin {
  default void init(PluginContext ctx, Map<String, String> extraConf) {}

  default void shutdown() {}

  default void onTaskStart() {}

  default void onTaskSucceeded() {}

  default void onTaskFailed(TaskFailedReason failureReason) {}
}
