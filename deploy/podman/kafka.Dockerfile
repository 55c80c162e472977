# The Kafka image of the compose stack where no registry serves apache/kafka (make images): Apache Kafka's
# jars from Maven Central on the Debian base, configured by KAFKA_* variables as apache/kafka is, with the
# /opt/kafka/bin commands docker-compose.yml runs. BINLAKE_KAFKA_IMAGE=localhost/binlake-kafka:<version>.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE} AS jars
ARG EXTRA_CA_CERTS=""
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && if [ -n "$EXTRA_CA_CERTS" ]; then printf '%s\n' "$EXTRA_CA_CERTS" \
       | awk '/BEGIN CERTIFICATE/ {n++} n {print > ("/usr/local/share/ca-certificates/extra-" n ".crt")}'; fi \
    && update-ca-certificates \
    && apt-get install -y --no-install-recommends maven openjdk-17-jdk-headless \
    && rm -rf /var/lib/apt/lists/*
COPY deploy/podman/kafka/pom.xml /build/pom.xml
RUN mvn -q -B -f /build/pom.xml dependency:copy-dependencies -DoutputDirectory=/opt/kafka/libs

FROM ${BASE_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 1000 appuser && useradd --system --uid 1000 --gid 1000 appuser \
    && mkdir -p /var/lib/kafka/data && chown -R 1000:1000 /var/lib/kafka
COPY --from=jars /opt/kafka/libs /opt/kafka/libs
COPY deploy/podman/kafka/bin /opt/kafka/bin
USER 1000:1000
EXPOSE 9092 9093
ENTRYPOINT ["/opt/kafka/bin/run.sh"]
