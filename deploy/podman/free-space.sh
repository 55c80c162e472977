#!/usr/bin/env bash
# Frees podman's storage before `make images` when it has under $1 GB free (docs/operations.md, Images).
#
# Why: every build whose sources changed leaves the stages it replaced behind as untagged images (GBs
# each), and a build killed midway leaves its buildah working container, which pins its image so that
# `podman image prune` refuses to run at all. Both are removed here; the next build redoes the stages it
# needs. Nothing tagged and no running container is touched, and a failure here never fails the build:
# the build itself says so if the space really runs out.
set -uo pipefail
min_free_gb=${1:?usage: free-space.sh MIN_FREE_GB}
store=$(podman info --format '{{.Store.GraphRoot}}' 2>/dev/null || echo /var/lib/containers)
free=$(df -Pk "$store" 2>/dev/null | awk 'NR==2 {print int($4 / 1048576)}')
[ -n "$free" ] && [ "$free" -lt "$min_free_gb" ] || exit 0
echo "images: $free GB free under $store (under $min_free_gb), removing leftover build containers and untagged images"
# Working containers of builds no longer running: podman lists them as external, status "Storage".
for id in $(podman ps -a --external --format '{{.ID}} {{.Status}}' 2>/dev/null | awk '$2 == "Storage" {print $1}'); do
  podman rm -f "$id" >/dev/null 2>&1 || echo "images: could not remove build container $id (left alone)"
done
podman image prune -f >/dev/null || echo "images: podman image prune failed (left alone)"
free=$(df -Pk "$store" 2>/dev/null | awk 'NR==2 {print int($4 / 1048576)}')
echo "images: $free GB free now"
exit 0
