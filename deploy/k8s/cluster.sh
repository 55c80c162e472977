#!/usr/bin/env bash
# A single-node Kubernetes made by this run, for `make test-k8s` (docs/operations.md, Kubernetes):
#   etcd on loopback; kube-apiserver, controller manager, scheduler; containerd (its own root, state and socket
#   under the run folder) with runc; the kubelet; kube-proxy; pods on a CNI bridge (Debian's
#   containernetworking-plugins) in network namespaces that containerd makes for them.
# Then COMMAND runs with KUBECONFIG set (without one, the cluster stays up until Ctrl-C), and everything the
# run started is stopped by pid, and what it made (pods, mounts, bridges, rules) removed, also on failure.
#
# No traffic leaves the machine. Pods cannot reach loopback, so the API server listens on a node address that
# exists only here: NODE_IP on an empty bridge of the run's own (no port, no route out). Pod addresses exist
# only on the pod bridge; the FORWARD chain drops whatever a pod sends outside the pod range, and the service
# range is routed into the empty bridge, so a service address kube-proxy did not translate goes nowhere.
#
# Usage: cluster.sh [COMMAND...]   Env: BINLAKE_K8S_RUN (the run folder; default a new one under /tmp),
#        BINLAKE_K8S_IMAGES (podman images imported into containerd, space-separated), BINLAKE_K8S_KEEP=1
#        (keep the run folder: logs). Without COMMAND, RUN/ready holds the kubeconfig's path once the node is Ready.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

K8S_VERSION=${K8S_VERSION:-v1.37.2}
NODE=binlake-node
NODE_IP=10.245.0.1
POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/24
SERVICE_IP=10.96.0.1
DNS_IP=10.96.0.10
NODE_BRIDGE=bl-node0
POD_BRIDGE=bl-pods0
ETCD_PORT=23791
PAUSE_IMAGE=localhost/binlake-pause:3.10.2
COREDNS_IMAGE=localhost/binlake-coredns:${COREDNS_VERSION:-v1.15.0}
RULE_COMMENT="binlake-k8s: pods reach no address outside the pod range"

bin=$(nice -n 19 "$here/build.sh" | tail -1)
export PATH="$bin:$PATH"
run=${BINLAKE_K8S_RUN:-$(mktemp -d /tmp/binlake-k8s.XXXXXX)}
mkdir -p "$run"/{logs,pids}
log() { echo "k8s [$(date +%T)] $*" >&2; }

# ---------------------------------------------------------------- stop, by pid, in reverse order of start
started=()
start() {  # start NAME COMMAND...: in the background, output to logs/NAME.log, pid recorded
  local name=$1; shift
  "$@" > "$run/logs/$name.log" 2>&1 9>&- &  # 9>&-: the run's lock stays this script's alone (below)
  echo $! > "$run/pids/$name"
  started+=("$name")
}
stop_pid() {  # stop_pid PID: SIGTERM, then SIGKILL after 10 s
  local pid=$1 i
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
remove_leftovers() {  # remove_leftovers RUN: what RUN made outside its own processes, once they are stopped
  local r=$1 cmd table rule chain c
  # Shims whose containerd is gone (each pod's, started by this run's containerd) and the containers in them.
  find "$r/containerd" -name '*.pid' 2>/dev/null | while read -r f; do kill -9 "$(cat "$f")" 2>/dev/null || true; done
  # Mounts under the run folder (overlay roots, shm, network namespaces), deepest first.
  awk -v r="$r" 'index($2, r) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
  done
  # The kubelet's pod cgroups and containerd's (cgroup v1: one tree per controller), empty once the pods are gone.
  for c in /sys/fs/cgroup/*/kubepods /sys/fs/cgroup/*/k8s.io; do [ -d "$c" ] && find "$c" -depth -type d -exec rmdir {} + 2>/dev/null; done
  ip link del "$POD_BRIDGE" 2>/dev/null || true
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  while iptables -D FORWARD -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "$RULE_COMMENT" -j DROP 2>/dev/null; do :; done
  # kube-proxy's table, and the kubelet's iptables chains (KUBE-FIREWALL, the canaries), which both leave
  # behind by design: the jumps to them first, then the chains.
  kube-proxy --cleanup >/dev/null 2>&1
  for cmd in iptables ip6tables; do
    for table in filter nat mangle; do
      "$cmd" -t "$table" -S 2>/dev/null | grep -E '^-A [A-Z]+ .*-j KUBE-' | sed 's/^-A/-D/' | while read -r rule; do
        eval "$cmd -t $table $rule"
      done
      "$cmd" -t "$table" -S 2>/dev/null | sed -n 's/^-N \(KUBE-.*\)/\1/p' | while read -r chain; do
        "$cmd" -t "$table" -F "$chain"; "$cmd" -t "$table" -X "$chain"
      done
    done
  done
  # The kubelet's links to the pods' logs (it writes them in /var/log/containers, wherever podLogsDir is).
  find /var/log/containers -maxdepth 1 -type l -lname "$r/*" -delete 2>/dev/null
}
teardown() {
  local code=$? i name
  trap - EXIT INT TERM
  set +e  # every step below is tried, whatever the one before did
  log "stopping (exit $code)"
  # The kubelet first (it would restart what goes next), then every pod through the CRI: containerd stops
  # their containers and removes their network namespaces and addresses (the CNI plugins' DEL).
  for ((i = ${#started[@]} - 1; i >= 0; i--)); do
    name=${started[i]}
    if [ "$name" = containerd ] && [ -S "$run/containerd/containerd.sock" ]; then
      timeout 60 crictl --runtime-endpoint "unix://$run/containerd/containerd.sock" rmp --all --force >/dev/null 2>&1 \
        || log "crictl rmp failed"
    fi
    stop_pid "$(cat "$run/pids/$name")"
  done
  remove_leftovers "$run"
  : > "$LOCK"  # stopped cleanly: nothing for the next run to remove
  if [ "${BINLAKE_K8S_KEEP:-0}" = 1 ] || [ "$code" != 0 ]; then log "logs kept in $run/logs"; else rm -rf "$run"; fi
  exit "$code"
}

# ---------------------------------------------------------------- one run per machine; a killed run's leftovers
# The node address, the bridges and the ports are fixed, so two runs cannot share a machine. The lock is held by
# this script alone (what it starts does not inherit it): a run killed before its teardown (SIGKILL, a machine
# session that ended) leaves no holder, only its folder's name in the lock file, and the next run removes
# what it left: the processes of this build, the pods, mounts, bridges and rules.
LOCK=/run/binlake-k8s.lock
exec 9<> "$LOCK"
if ! flock -n 9; then
  log "another cluster runs on this machine (its folder: $(cat "$LOCK")); stop it first (Ctrl-C, or kill its cluster.sh)"
  exit 1
fi
previous=$(cat "$LOCK")
if [ -n "$previous" ] || ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
  log "a run that did not stop (${previous:-folder unknown}) left processes or a network: removing them"
  for p in /proc/[0-9]*; do
    case $(readlink "$p/exe" 2>/dev/null) in "$bin"/*) stop_pid "${p#/proc/}" & ;; esac
  done
  wait
  (set +e; remove_leftovers "${previous:-/nonexistent}")
fi
echo "$run" > "$LOCK"
trap teardown EXIT
trap 'exit 130' INT TERM

wait_for() {  # wait_for SECONDS WHAT COMMAND...: until COMMAND succeeds; the last log lines on timeout
  local limit=$1 what=$2 i; shift 2
  for ((i = 0; i < limit * 5; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  log "timed out after ${limit}s waiting for $what"
  tail -n 30 "$run"/logs/*.log >&2
  return 1
}

# ---------------------------------------------------------------- certificates, configuration
"$here/certs.sh" "$run/pki" "$NODE" "$NODE_IP" "$SERVICE_IP"
pki=$run/pki
kubeconfig() {  # kubeconfig NAME CERT: a kubeconfig for the client certificate pki/CERT.crt
  cat > "$run/$1.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: binlake
  cluster: {server: "https://$NODE_IP:6443", certificate-authority: "$pki/ca.crt"}
users:
- name: $1
  user: {client-certificate: "$pki/$2.crt", client-key: "$pki/$2.key"}
contexts:
- name: binlake
  context: {cluster: binlake, user: $1}
current-context: binlake
YAML
}
kubeconfig admin admin
kubeconfig controller-manager controller-manager
kubeconfig scheduler scheduler
kubeconfig kubelet kubelet
kubeconfig kube-proxy kube-proxy
export KUBECONFIG=$run/admin.kubeconfig

# ---------------------------------------------------------------- network
ip link add "$NODE_BRIDGE" type bridge
ip addr add "$NODE_IP/32" dev "$NODE_BRIDGE"
ip link set "$NODE_BRIDGE" up
ip route add "$SERVICE_CIDR" dev "$NODE_BRIDGE"
iptables -I FORWARD 1 -s "$POD_CIDR" ! -d "$POD_CIDR" -m comment --comment "$RULE_COMMENT" -j DROP

# ---------------------------------------------------------------- control plane
log "etcd"
start etcd etcd --name binlake --data-dir "$run/etcd" \
  --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
  --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
  --initial-cluster "binlake=http://127.0.0.1:$((ETCD_PORT + 1))" --log-level warn
wait_for 30 etcd curl -fsS "http://127.0.0.1:$ETCD_PORT/health"

log "kube-apiserver"
start kube-apiserver kube-apiserver --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address "$NODE_IP" --advertise-address "$NODE_IP" --secure-port 6443 \
  --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" --client-ca-file "$pki/ca.crt" \
  --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
  --kubelet-certificate-authority "$pki/ca.crt" --kubelet-preferred-address-types InternalIP \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
  --allow-privileged=true --profiling=false
wait_for 90 kube-apiserver kubectl get --raw /readyz

log "controller manager, scheduler"
start kube-controller-manager kube-controller-manager --kubeconfig "$run/controller-manager.kubeconfig" \
  --authentication-kubeconfig "$run/controller-manager.kubeconfig" --authorization-kubeconfig "$run/controller-manager.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials \
  --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
  --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
  --service-cluster-ip-range "$SERVICE_CIDR" --profiling=false
start kube-scheduler kube-scheduler --kubeconfig "$run/scheduler.kubeconfig" \
  --authentication-kubeconfig "$run/scheduler.kubeconfig" --authorization-kubeconfig "$run/scheduler.kubeconfig" \
  --bind-address 127.0.0.1 --leader-elect=false --profiling=false

# ---------------------------------------------------------------- containerd, images
log "containerd"
mkdir -p "$run/cni/net.d"
cat > "$run/cni/net.d/10-binlake.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "binlake",
  "plugins": [
    {"type": "bridge", "bridge": "$POD_BRIDGE", "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
              "dataDir": "$run/cni/ipam"}},
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
JSON
cat > "$run/containerd.toml" <<TOML
version = 3
root = "$run/containerd/root"
state = "$run/containerd/state"
[grpc]
  address = "$run/containerd/containerd.sock"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins.'io.containerd.cri.v1.runtime']
  netns_mounts_under_state_dir = true
  # The machine's sandbox withholds CAP_SYS_RESOURCE: runc cannot lower a container's oom_score_adj below
  # containerd's own (the pause container asks for -998: "failed to update /proc/self/oom_score_adj").
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
      Root = "$run/runc"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$run/cni/net.d"
[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
TOML
start containerd containerd --config "$run/containerd.toml"
ctr_() { ctr --address "$run/containerd/containerd.sock" -n k8s.io "$@"; }
wait_for 30 containerd ctr_ version

# Images come from podman's store (built here: no registry), saved and imported into containerd's.
"$here/pause-image.sh" "$PAUSE_IMAGE" "$K8S_VERSION" >/dev/null
if ! podman image exists "$COREDNS_IMAGE"; then
  context=$run/coredns-image; mkdir -p "$context"; cp "$bin/coredns" "$context/"
  podman build --format docker -t "$COREDNS_IMAGE" -f "$here/images/coredns.Containerfile" "$context" >/dev/null
  rm -rf "$context"
fi
for image in $PAUSE_IMAGE $COREDNS_IMAGE ${BINLAKE_K8S_IMAGES:-}; do
  log "image $image"
  podman save --format docker-archive "$image" | ctr_ images import --local - >/dev/null
done

# ---------------------------------------------------------------- node
log "kubelet"
echo "nameserver $DNS_IP" > "$run/resolv.conf"
cat > "$run/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
containerRuntimeEndpoint: unix://$run/containerd/containerd.sock
# This machine mounts cgroup v1, which Kubernetes 1.35+ refuses unless told (KEP-5573); no systemd runs here.
failCgroupV1: false
cgroupDriver: cgroupfs
address: $NODE_IP
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
clusterDomain: cluster.local
clusterDNS: [$DNS_IP]
resolvConf: $run/resolv.conf
podLogsDir: $run/pod-logs
failSwapOn: false
# A test machine shared with other work: its disk and memory use are not this node's to evict pods over.
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%", nodefs.inodesFree: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
YAML
start kubelet kubelet --config "$run/kubelet.yaml" --kubeconfig "$run/kubelet.kubeconfig" \
  --root-dir "$run/kubelet" --hostname-override "$NODE" --node-ip "$NODE_IP"
wait_for 120 "node $NODE registered" kubectl get node "$NODE"
kubectl wait --for=condition=Ready "node/$NODE" --timeout=120s >&2 || { tail -n 40 "$run/logs/kubelet.log" >&2; exit 1; }
log "node $NODE Ready; kube-proxy"

# Services: kube-proxy in nftables mode (its own table, which --cleanup removes whole). The conntrack settings
# are left as the machine has them (0: don't touch), as this sandbox may refuse the sysctls.
cat > "$run/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: $run/kube-proxy.kubeconfig}
hostnameOverride: $NODE
mode: nftables
clusterCIDR: $POD_CIDR
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
nodePortAddresses: ["$NODE_IP/32"]
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
start kube-proxy kube-proxy --config "$run/kube-proxy.yaml"
wait_for 60 kube-proxy curl -fsS http://127.0.0.1:10256/healthz

log "CoreDNS"
sed "s#image: IMAGE#image: $COREDNS_IMAGE#; s#clusterIP: 10.96.0.10#clusterIP: $DNS_IP#" "$here/manifests/coredns.yaml" \
  | kubectl apply -f - >/dev/null
kubectl -n kube-system rollout status deployment/coredns --timeout=180s >&2
log "up; KUBECONFIG=$KUBECONFIG"

if [ $# -gt 0 ]; then
  "$@"
else
  # Up until SIGINT or SIGTERM (a test's fixture, tests/k8s/cluster.py, waits for this file, then stops us).
  echo "$KUBECONFIG" > "$run/ready"
  trap 'exit 0' TERM  # being stopped is how this mode ends: not a failure
  log "the cluster stays up until Ctrl-C"
  while :; do sleep 1; done
fi
