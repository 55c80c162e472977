package io.binlake.spark;

import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import py4j.reflection.ClassLoadingStrategy;
import py4j.reflection.ReflectionUtil;

/**
 * py4j's class lookups, remembering the names that are no class.
 *
 * <p>Python reaches a JVM class through py4j one name at a time: {@code jvm.org.apache.hadoop.fs.Path} asks
 * the JVM for a class named {@code org}, then {@code org.apache}, and so on, and a name without its package
 * ({@code PythonUtils}) is tried in each of PySpark's imported packages. Each failed lookup searches every
 * jar of the class path (about 280 in a Spark driver), and a mirror batch made tens of thousands of them:
 * about 6% of the driver's CPU in a batch of 100 small tables. A name no class has is asked of the same
 * loader again and again, so the answer is kept, per class loader (a loader's classes are fixed at its
 * creation, apart from jars a user adds to it later; a name looked up before such a jar came stays
 * unknown, which only py4j's lookups by name see). Classes found are not kept: the loader answers those
 * from its own table at once.
 */
public final class KnownMissingClasses implements ClassLoadingStrategy {
  private static final int MAX_NAMES = 100_000;

  private final Map<ClassLoader, Set<String>> missing = Collections.synchronizedMap(new WeakHashMap<>());

  /** py4j's lookups of this JVM go through an instance of this class from now on. */
  public static void install() {
    if (!(ReflectionUtil.getClassLoadingStrategy() instanceof KnownMissingClasses)) {
      ReflectionUtil.setClassLoadingStrategy(new KnownMissingClasses());
    }
  }

  @Override
  public Class<?> classForName(String className) throws ClassNotFoundException {
    ClassLoader loader = getClassLoader();
    Set<String> known = missing.computeIfAbsent(loader, l -> ConcurrentHashMap.newKeySet());
    if (known.contains(className)) {
      throw new Missing(className);
    }
    try {
      return Class.forName(className, true, loader);
    } catch (ClassNotFoundException e) {
      if (known.size() < MAX_NAMES) {
        known.add(className);
      }
      throw e;
    }
  }

  @Override
  public ClassLoader getClassLoader() {
    return Thread.currentThread().getContextClassLoader(); // as py4j's default strategy
  }

  /** A name known to be no class; without a stack trace (py4j only catches it). */
  private static final class Missing extends ClassNotFoundException {
    Missing(String className) {
      super(className);
    }

    @Override
    public synchronized Throwable fillInStackTrace() {
      return this;
    }
  }
}
