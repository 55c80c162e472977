package py4j.reflection;

public class ReflectionUtil {
  public static ClassLoadingStrategy getClassLoadingStrategy() {
    return null;
  }

  public static void setClassLoadingStrategy(ClassLoadingStrategy strategy) {}
}
