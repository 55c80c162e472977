package io.binlake.spark;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.PluginContext;
import org.apache.spark.api.plugin.SparkPlugin;

/**
 * Gives each Spark task one SQL configuration for its whole run, instead of a new one per lookup.
 *
 * <p>Inside a running task, Spark's {@code SQLConf.get} builds a new {@code ReadOnlySQLConf} from the
 * task's properties on every call (copying the process environment and system properties into a map)
 * unless a thread-local configuration is set. Spark 4.2 calls it per field of every row it builds in
 * some places: {@code SpecificInternalRow}'s constructor asks {@code TypeOps} about each field's type,
 * which reads a flag of the configuration. spark-avro's reader builds such a row for every union value
 * and nested record, so decoding the canonical event's images spent more time building configurations
 * than reading Avro.
 *
 * <p>This executor plugin sets that thread-local configuration when a task starts (a
 * {@code ReadOnlySQLConf} of the task's own properties: what every {@code SQLConf.get} of the task would
 * have built) and removes it when the task ends. Nothing else changes. Spark's private thread-local is
 * reached by reflection: if a Spark release moves it, the plugin does nothing and says so in the log,
 * and {@link #active()} is false (a test checks it).
 *
 * <p>Compiled against the plugin interfaces alone (stubs of them, see {@code ../stubs}), so that building
 * it needs a JDK and nothing of Spark; the Spark classes it touches are looked up at run time.
 */
public final class TaskConfPlugin implements SparkPlugin {
  private static volatile boolean active;
  private static final AtomicLong TASKS = new AtomicLong();

  /** Whether the executor side found Spark's thread-local configuration (false before it starts). */
  public static boolean active() {
    return active;
  }

  /** How many tasks ran with a configuration set by this plugin, in this JVM. */
  public static long tasks() {
    return TASKS.get();
  }

  @Override
  public DriverPlugin driverPlugin() {
    return null;
  }

  @Override
  public ExecutorPlugin executorPlugin() {
    return new Executor();
  }

  static final class Executor implements ExecutorPlugin {
    private ThreadLocal<Object> existing;
    private Method taskContext;
    private Constructor<?> readOnlyConf;

    @Override
    @SuppressWarnings("unchecked")
    public void init(PluginContext ctx, Map<String, String> extraConf) {
      try {
        Class<?> confObject = Class.forName("org.apache.spark.sql.internal.SQLConf$");
        Object module = confObject.getField("MODULE$").get(null);
        Method existingConf = confObject.getDeclaredMethod("existingConf");
        existingConf.setAccessible(true);
        Class<?> contextClass = Class.forName("org.apache.spark.TaskContext");
        taskContext = contextClass.getMethod("get");
        readOnlyConf =
            Class.forName("org.apache.spark.sql.internal.ReadOnlySQLConf").getConstructor(contextClass);
        existing = (ThreadLocal<Object>) existingConf.invoke(module);
        active = true;
      } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
        existing = null;
        System.err.println(
            "binlake TaskConfPlugin: Spark's task configuration is not where this plugin looks for it ("
                + e
                + "); Spark runs as without the plugin");
      }
    }

    @Override
    public void onTaskStart() {
      if (existing == null || existing.get() != null) {
        return;
      }
      try {
        Object context = taskContext.invoke(null);
        if (context != null) {
          existing.set(readOnlyConf.newInstance(context));
          TASKS.incrementAndGet();
        }
      } catch (ReflectiveOperationException | RuntimeException e) {
        // Without it the task reads its configuration as Spark does by itself: correct, slower.
      }
    }

    @Override
    public void onTaskSucceeded() {
      if (existing != null) {
        existing.remove();
      }
    }

    @Override
    public void onTaskFailed(TaskFailedReason reason) {
      if (existing != null) {
        existing.remove();
      }
    }
  }
}
