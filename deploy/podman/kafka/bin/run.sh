#!/bin/bash
# The local Kafka image's entrypoint, configured as apache/kafka's: every KAFKA_<NAME> variable becomes the
# broker property <name> (lower case, _ -> .), CLUSTER_ID formats the storage once (KRaft).
set -euo pipefail
properties=/var/lib/kafka/server.properties
: > "$properties"
while IFS='=' read -r name value; do
  case "$name" in
    KAFKA_HEAP_OPTS|KAFKA_OPTS) ;;
    KAFKA_*)
      key="${name#KAFKA_}"
      key="${key,,}"
      echo "${key//_/.}=${value}" >> "$properties"
      ;;
  esac
done < <(env)
logs_dir="$(sed -n 's/^log\.dirs=//p' "$properties")"
java=(java ${KAFKA_HEAP_OPTS:--Xmx512m} -cp "/opt/kafka/libs/*" -Dlog4j2.configurationFile=/opt/kafka/bin/log4j2.xml)
if [ ! -f "${logs_dir:-/var/lib/kafka/data}/meta.properties" ]; then
  "${java[@]}" kafka.tools.StorageTool format --cluster-id="${CLUSTER_ID:?set CLUSTER_ID}" -c "$properties" --ignore-formatted
fi
exec "${java[@]}" kafka.Kafka "$properties"
