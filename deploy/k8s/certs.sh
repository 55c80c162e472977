#!/usr/bin/env bash
# The cluster's certificates, made by each run (openssl; EC P-256 keys): one CA, the API server's serving
# certificate, a client certificate per component (its user and group are what RBAC grants), the kubelet's
# serving certificate, and the service-account signing key pair. Usage: certs.sh DIR NODE_NAME NODE_IP SERVICE_IP
set -euo pipefail
dir=$1 node=$2 node_ip=$3 service_ip=$4
mkdir -p "$dir"; cd "$dir"

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }

key ca
openssl req -x509 -new -key ca.key -subj "/CN=binlake-test-ca" -days 2 -out ca.crt \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign"

# leaf NAME SUBJECT USAGE [SAN]: a certificate signed by the CA, valid for two days (a run lasts minutes).
leaf() {
  local name=$1 subject=$2 usage=$3 san=${4:-}
  key "$name"
  openssl req -new -key "$name.key" -subj "$subject" -out "$name.csr"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature"
    echo "extendedKeyUsage=$usage"
    [ -n "$san" ] && echo "subjectAltName=$san"
  } > "$name.ext"
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile "$name.ext" \
    -out "$name.crt" 2>/dev/null
  rm -f "$name.csr" "$name.ext"
}

leaf apiserver "/CN=kube-apiserver" serverAuth \
  "IP:$node_ip,IP:127.0.0.1,IP:$service_ip,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
leaf kubelet-serving "/CN=$node" serverAuth "IP:$node_ip,DNS:$node"
leaf admin "/O=system:masters/CN=binlake-admin" clientAuth
leaf apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" clientAuth
leaf controller-manager "/CN=system:kube-controller-manager" clientAuth
leaf scheduler "/CN=system:kube-scheduler" clientAuth
leaf kubelet "/O=system:nodes/CN=system:node:$node" clientAuth
leaf kube-proxy "/CN=system:kube-proxy" clientAuth
# Service-account tokens are signed with this key (ES256) and checked with its public half.
key sa
openssl pkey -in sa.key -pubout -out sa.pub
chmod 600 ./*.key
