#!/usr/bin/env bash
# Runs the health checks of the running containers every few seconds: podman schedules them with systemd
# timers, and without systemd (containers, CI sandboxes) they never run, so compose's
# `condition: service_healthy` would wait for ever. make test-deploy runs this beside compose.
set -u
while true; do
    for container in $(podman ps --filter health=starting --filter health=unhealthy -q 2>/dev/null); do
        podman healthcheck run "$container" >/dev/null 2>&1 || true
    done
    for container in $(podman ps --filter health=healthy -q 2>/dev/null); do
        podman healthcheck run "$container" >/dev/null 2>&1 || true
    done
    sleep 5
done
