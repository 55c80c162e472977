#!/usr/bin/env bash
# The pod sandbox's pause image, made here (no registry can be reached): Kubernetes' own pause.c from its
# module (the Go module proxy), linked statically by gcc, alone in an image built FROM scratch by podman.
# Nothing to do when podman has the image. Usage: pause-image.sh IMAGE K8S_VERSION
set -euo pipefail
image=$1 k8s_version=$2
podman image exists "$image" && exit 0
src=$(go mod download -json "k8s.io/kubernetes@$k8s_version" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')/build/pause/linux/pause.c
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
gcc -Os -Wall -Werror -static -DVERSION="binlake-$k8s_version" -o "$work/pause" "$src"
strip "$work/pause"
printf 'FROM scratch\nCOPY pause /pause\nUSER 65535:65535\nENTRYPOINT ["/pause"]\n' > "$work/Containerfile"
podman build --format docker -t "$image" -f "$work/Containerfile" "$work"
