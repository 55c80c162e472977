#!/bin/bash
# The sink image's entrypoint: `binlake ARGS` (sink by default), and the driver and executor commands that
# Spark on Kubernetes gives its pods (the Spark operator's SparkApplication, helm sink.mode=spark-operator),
# as the entrypoint of Spark's own images does (kubernetes/dockerfiles/spark/entrypoint.sh): pyspark's jars
# carry Spark's Kubernetes backend, SPARK_HOME is the pyspark package.
set -eo pipefail
SPARK_HOME="${SPARK_HOME:-$(python3 -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
export SPARK_HOME
case "${1:-}" in
  driver)
    shift
    exec "$SPARK_HOME/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    # The executor's JVM options come as SPARK_JAVA_OPT_<n> variables, in order.
    mapfile -t java_opts < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n | sed 's/^[^=]*=//')
    exec "${JAVA_HOME:-/usr}/bin/java" "${java_opts[@]}" \
      -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
      -cp "${SPARK_CLASSPATH:+$SPARK_CLASSPATH:}$SPARK_HOME/jars/*" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" --executor-id "${SPARK_EXECUTOR_ID}" --cores "${SPARK_EXECUTOR_CORES}" \
      --app-id "${SPARK_APPLICATION_ID}" --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" --podName "${SPARK_EXECUTOR_POD_NAME}"
    ;;
  *)
    exec binlake "$@"
    ;;
esac
