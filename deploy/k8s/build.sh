#!/usr/bin/env bash
# Builds the single-node cluster's binaries from the Go module proxy (no prebuilt download can be had here)
# into ~/.cache/binlake/k8s-<version>/bin, with the other tools: nothing to do for a binary already there.
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubelet  k8s.io/kubernetes (wrapper module, below)
#   etcd                                                              go.etcd.io/etcd/server/v3's etcdmain
#   kube-proxy, kubectl (Debian's is 1.32: outside the skew policy)   (the same)
#   containerd, containerd-shim-runc-v2, ctr                          github.com/containerd/containerd/v2
#   crictl (the run removes its pods through the CRI)                 sigs.k8s.io/cri-tools
#   coredns (the cluster's DNS, in an image made here)                github.com/coredns/coredns
#   prometheus (Kubernetes discovery of the pods' annotations)        github.com/prometheus/prometheus
#     Debian's Prometheus (make tools, the compose stack's image) is built without kubernetes_sd_configs.
# Debian's containerd (1.6) and etcd (3.4) are older than Kubernetes 1.37 takes (docs/operations.md, Kubernetes).
# Heavy: run under nice (the Makefile does). Prints the bin folder on its last line.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
# The staging modules (k8s.io/api, client-go, ...) are published as v0.<minor>.<patch> of the same release.
STAGING_VERSION=v0.${K8S_VERSION#v1.}
ETCD_VERSION=${ETCD_VERSION:-v3.7.3}
CONTAINERD_VERSION=${CONTAINERD_VERSION:-v2.4.2}
CRI_TOOLS_VERSION=${CRI_TOOLS_VERSION:-v1.37.0}
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
# Prometheus 3.x is published on the proxy as v0.3xx.y of its module (3.16.0: v0.316.0).
PROMETHEUS_VERSION=${PROMETHEUS_VERSION:-v0.316.0}
CACHE=${BINLAKE_K8S_CACHE:-$HOME/.cache/binlake/k8s-$K8S_VERSION}
BIN=$CACHE/bin
mkdir -p "$BIN"
export GOFLAGS=-buildvcs=false

# A part is built once per version: its stamp names the version, so a changed version builds it anew.
built() { [ -e "$CACHE/built/$1" ]; }

# Kubernetes: its go.mod replaces every staging module with ./staging/src/..., which a module from the proxy
# lacks (nested modules are cut out of its zip), so `go install` refuses it. A module of our own requires
# k8s.io/kubernetes and points each staging module at its published version instead.
build_kubernetes() {
  built "kubernetes@$K8S_VERSION" && return 0
  local src=$CACHE/src/kubernetes kmod
  kmod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/.*"GoMod": "\(.*\)",/\1/p')
  rm -rf "$src"; mkdir -p "$src"
  {
    echo "module binlake.local/k8s-build"
    sed -n 's/^go \(.*\)/go \1/p; s/^godebug \(.*\)/godebug \1/p' "$kmod"
    echo "require k8s.io/kubernetes $K8S_VERSION"
    sed -n "s#^\t\(k8s.io/[a-z0-9-]*\) => ./staging/.*#replace \1 => \1 $STAGING_VERSION#p" "$kmod"
  } > "$src/go.mod"
  # The binaries as tool imports, so `go mod tidy` resolves what they need (go.sum).
  {
    echo "//go:build tools"
    echo "package tools"
    echo "import ("
    for c in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do echo "	_ \"k8s.io/kubernetes/cmd/$c\""; done
    echo ")"
  } > "$src/tools.go"
  (cd "$src" && go mod tidy)
  # The version the binaries report (kubelet and API server compare theirs), as Kubernetes' own build stamps it.
  local minor=${K8S_VERSION#v1.} ldflags="-s -w" p
  minor=${minor%%.*}
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
  done
  (cd "$src" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$BIN/" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl)
}

# etcd: the server's module is a library; its main package lives in a module the proxy does not serve for
# every release, so a three-line main calls etcdmain (what etcd's own main does).
build_etcd() {
  built "etcd@$ETCD_VERSION" && return 0
  local src=$CACHE/src/etcd
  rm -rf "$src"; mkdir -p "$src"
  printf 'module binlake.local/etcd-build\n\ngo 1.26\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" > "$src/go.mod"
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' > "$src/main.go"
  (cd "$src" && go mod tidy && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" .)
}

# containerd v2: no replace directives, so `go install` builds it as released.
build_containerd() {
  built "containerd@$CONTAINERD_VERSION" && return 0
  local m=github.com/containerd/containerd/v2
  CGO_ENABLED=0 GOBIN=$BIN go install -trimpath -tags no_btrfs,no_devmapper,no_zfs -ldflags "-s -w" \
    "$m/cmd/containerd@$CONTAINERD_VERSION" "$m/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" "$m/cmd/ctr@$CONTAINERD_VERSION"
}

# crictl: no replace directives either.
build_crictl() {
  built "crictl@$CRI_TOOLS_VERSION" && return 0
  CGO_ENABLED=0 GOBIN=$BIN go install -trimpath -ldflags "-s -w" "sigs.k8s.io/cri-tools/cmd/crictl@$CRI_TOOLS_VERSION"
}

# CoreDNS: no replace directives; its default plugin set (plugin.cfg) includes kubernetes.
build_coredns() {
  built "coredns@$COREDNS_VERSION" && return 0
  CGO_ENABLED=0 GOBIN=$BIN go install -trimpath -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
}

# Prometheus: no replace directives; its default discovery set includes kubernetes. No web UI assets (the
# test reads its HTTP API only).
build_prometheus() {
  built "prometheus@$PROMETHEUS_VERSION" && return 0
  CGO_ENABLED=0 GOBIN=$BIN go install -trimpath -ldflags "-s -w" \
    "github.com/prometheus/prometheus/cmd/prometheus@$PROMETHEUS_VERSION"
}

mkdir -p "$CACHE/built"
# One build at a time per cache: CI starts one in the background (.ci/run) and make test-k8s asks again; the
# second waits for the first, then finds its stamps.
exec 9> "$CACHE/.build.lock"
flock 9
for part in ${*:-kubernetes etcd containerd crictl coredns prometheus}; do
  start=$SECONDS
  "build_$part"
  case $part in
    kubernetes) version=$K8S_VERSION ;; etcd) version=$ETCD_VERSION ;; containerd) version=$CONTAINERD_VERSION ;;
    crictl) version=$CRI_TOOLS_VERSION ;; coredns) version=$COREDNS_VERSION ;;
    prometheus) version=$PROMETHEUS_VERSION ;;
  esac
  touch "$CACHE/built/$part@$version"
  echo "k8s build: $part in $((SECONDS - start)) s" >&2
done
echo "$BIN"
