# The Prometheus image of the compose stack where no registry serves prom/prometheus (make images):
# Debian's Prometheus server on the Debian base. BINLAKE_PROMETHEUS_IMAGE=localhost/binlake-prometheus:dev.
ARG BASE_IMAGE=debian:bookworm-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
    && apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /prometheus /etc/prometheus && chown -R prometheus:prometheus /prometheus
USER prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
