#!/usr/bin/env bash
# Builds the Debian bookworm base image of deploy/Dockerfile from Debian's package archive
# (debootstrap --variant=minbase, then podman import), for machines that reach no container registry.
# Usage: deploy/podman/base-image.sh TAG   (idempotent: an existing TAG is kept)
set -euo pipefail
tag="${1:-localhost/binlake-base:bookworm}"
if podman image exists "$tag"; then
    echo "base image $tag exists"
    exit 0
fi
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$root.log" 2>&1 || { tail -20 "$root.log"; exit 1; }
rm -f "$root.log"
# As debian:bookworm-slim: the point releases and the security archive too (rustc-web, the JRE's fixes).
rm -f "$root/etc/apt/sources.list"
cat >"$root/etc/apt/sources.list.d/debian.sources" <<SOURCES
Types: deb
URIs: $mirror
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
# As the slim images: no documentation, no package lists, no apt caches.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/usr/share/doc/* "$root"/usr/share/man/*
tar -C "$root" -c . | podman import --change 'CMD ["bash"]' - "$tag"
