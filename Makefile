# binlake: `make demo` runs the main job, `make test` checks everything.
# Both build the virtualenv from nothing (.venv in the repo root).

PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The hot path compiled by mypyc (setup.py; the list is in shared/native.py)
# and the Rust kernel (shared/kernel), rebuilt in place when one of their
# sources changes. BINLAKE_COMPILE=0 runs the hot path as pure Python (the kernel is always built).
COMPILE := $(if $(filter 0,$(BINLAKE_COMPILE)),0,1)
NATIVE := $(VENV)/.compiled-$(COMPILE)
COMPILED_SOURCES := $(shell $(PYTHON) -c "import sys; sys.path.insert(0, '.'); from binlake.shared.native import compiled_sources; print(' '.join(compiled_sources()))" 2>/dev/null)

.PHONY: install native spark-archive demo test lint typecheck unit bench chaos fuzz clean tools deploy-tools images podman test-deploy test-pythons test-system k8s-tools test-k8s

# The packages are installed by uv (from PyPI, into the venv): the same versions pip resolves, in well under
# half pip's time (parallel downloads, no per-package subprocess). uv keeps each PyPI sdist it builds (pyspark's
# is 0.5-1.4 GB) once per fresh venv: the prune drops the copies nothing refers to any more.
UV_VERSION := 0.13.9
$(STAMP): pyproject.toml
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv==$(UV_VERSION)
	BINLAKE_NATIVE_PART=none $(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	$(BIN)/uv cache prune --quiet || true
	touch $(STAMP)

# This Python's extension suffix: the builds of other Pythons (their own venvs) stay in place.
EXT := $(shell $(PYTHON) -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))" 2>/dev/null)
RUST_SOURCES := shared/kernel/Cargo.toml shared/kernel/Cargo.lock $(wildcard shared/kernel/src/*.rs)

# binlake's Spark jar (spark_sink/jvm: the event decoder, the mirror's fold): compiled by the JDK's javac, a few
# seconds, rebuilt when a source changes. Without javac the sink refuses to start, saying how to build it (the
# stamp keeps make from trying each time).
JVM_JAR := spark_sink/jvm/binlake-spark.jar
JVM_STAMP := $(VENV)/.jvm-built
JVM_SOURCES := spark_sink/jvm/build.py $(shell find spark_sink/jvm/src spark_sink/jvm/stubs -name '*.java' 2>/dev/null)
$(JVM_STAMP): $(STAMP) $(JVM_SOURCES)
	$(BIN)/python -m binlake.spark_sink.jvm.build --optional
	touch $(JVM_STAMP)

# mypyc's C compile uses one core: cargo builds the fast lane on the other meanwhile (with its own job
# count: it cannot join make's jobserver from a recipe). A build of the same inputs made earlier on this
# machine (another clone's) is copied from BINLAKE_NATIVE_CACHE instead (shared/native_cache.py; empty: off).
$(NATIVE): $(STAMP) setup.py shared/native.py shared/native_cache.py $(COMPILED_SOURCES) $(RUST_SOURCES)
	rm -f $(VENV)/.compiled-* *__mypyc$(EXT) shared/*__mypyc$(EXT) $(addsuffix $(EXT),$(basename $(COMPILED_SOURCES)))
	rm -f shared/kernel/_kernel$(EXT)
	if [ $(COMPILE) = 1 ]; then \
		key=$$($(BIN)/python -m binlake.shared.native_cache key); \
		if $(BIN)/python -m binlake.shared.native_cache restore $$key; then echo "native: build $$key from the cache"; \
		else \
		MAKEFLAGS= BINLAKE_NATIVE_PART=rust $(BIN)/python setup.py --quiet build_ext --inplace & rust=$$!; \
		BINLAKE_NATIVE_PART=mypyc $(BIN)/python setup.py --quiet build_ext --inplace; mypyc=$$?; \
		wait $$rust && [ $$mypyc = 0 ] && $(BIN)/python -m binlake.shared.native_cache store $$key; fi; \
	else MAKEFLAGS= BINLAKE_NATIVE_PART=rust $(BIN)/python setup.py --quiet build_ext --inplace; fi
	touch $(NATIVE)

install: $(NATIVE) $(JVM_STAMP)

native: $(NATIVE) $(JVM_STAMP)

# The driver JVM's class-data-sharing archive (spark_sink/class_archive.py): made once per machine, Java and
# set of Spark jars (in the Ivy folder, ~/.cache/binlake/ivy/cds); every Spark start then loads its classes
# already parsed and verified. Nothing to do when it exists.
spark-archive: $(NATIVE) $(JVM_STAMP)
	$(BIN)/python -m binlake.spark_sink.class_archive

demo: $(NATIVE) $(JVM_STAMP) spark-archive
	$(BIN)/python -m binlake.shared.cli.demo

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The checks and builds first, side by side (two jobs; each target's output shown whole when it ends).
# The deployment checks' tools (tests/deploy) go on PATH; `make tools` installs them once per machine.
# Two pytest workers (pytest-xdist), each with its own broker and Spark session: most integration tests
# wait on Kafka, Spark's driver or a subprocess, so two run side by side on two cores. TEST_WORKERS=0: one process.
# Tests are handed out two at a time in tests/conftest.py's order (the long ones first).
TEST_WORKERS ?= 2
test:
	$(MAKE) --jobs=2 --output-sync=target native spark-archive lint typecheck tools
	PATH="$(TOOLS)/bin:$$PATH" BINLAKE_TOOLS_DIR="$(TOOLS)" $(BIN)/pytest -n $(TEST_WORKERS) --dist load --maxschedchunk 2 -m "not peer and not chaos and not system"

# The whole pipeline as processes (tests marked `system`): a short make chaos, make demo's code on a small workload,
# the normalizer and sink scraped by a real Prometheus, both through SASL_SSL, and a node of the 3-node dev cluster
# failing and coming back; on two workers, the chaos run on one and the rest on the other. CI runs it after `make test`.
test-system:
	$(MAKE) --jobs=2 --output-sync=target native spark-archive tools
	PATH="$(TOOLS)/bin:$$PATH" BINLAKE_TOOLS_DIR="$(TOOLS)" $(BIN)/pytest -n 2 --dist loadgroup -m system

# The unit tier alone: no broker, no Spark, no deployment tools (a few minutes).
unit: $(NATIVE)
	$(BIN)/pytest -n $(TEST_WORKERS) -m "unit and not deploy" tests

# The unit tier on the other Pythons binlake supports, each in a venv of its own (.venv-3.12, ...): the
# interpreter from PATH, else pyenv's (`make test` runs on $(PYTHON)).
OTHER_PYTHONS ?= 3.12 3.13
test-pythons:
	set -e; for v in $(OTHER_PYTHONS); do \
	  py=$$(command -v python$$v || true); \
	  if [ -z "$$py" ] || ! "$$py" -c '' 2>/dev/null; then \
	    py="$$(pyenv root 2>/dev/null)/versions/$$(pyenv latest $$v 2>/dev/null)/bin/python$$v"; fi; \
	  $(MAKE) unit PYTHON="$$py" VENV=.venv-$$v; done

bench: $(NATIVE) $(JVM_STAMP)
	$(BIN)/python -m tests.bench.run

# Every parser and fast lane fuzzed from the golden corpus (tests/fuzz, docs/development.md): FUZZ_INPUTS inputs
# split evenly over the formats, coverage-guided by atheris; a JSON summary, exit 1 on any crash, hang or mismatch.
FUZZ_INPUTS ?= 1000000
fuzz: $(NATIVE)
	$(BIN)/python -m tests.fuzz.run --inputs $(FUZZ_INPUTS)

# The whole pipeline under chaos (tests/chaos, docs/development.md): CHAOS_CHANGES changes through the 3-node dev
# cluster (CHAOS_NODES=1: the dev broker), two normalizers per format and the sink, CHAOS_KILLS SIGKILLs aimed inside
# transactions and micro-batches, the cluster's faults and one whole restart; a JSON summary, exit 1 on any loss,
# duplicate or mismatch, or a recovery path of the runtime never taken. Then the tests `make test` leaves out:
# the sink's kill test with CHAOS_SINK_KILLS kills (marked `chaos`: the short chaos run covers its one-kill case,
# minutes per kill: a Spark start each) and the faust peer under the normalizer's kill test (marked `peer`: it tests
# no binlake code).
CHAOS_CHANGES ?= 200000
CHAOS_KILLS ?= 20
CHAOS_SINK_KILLS ?= 4
CHAOS_NODES ?= 3
chaos: $(NATIVE) $(JVM_STAMP) spark-archive
	$(BIN)/python -m tests.chaos.run --changes $(CHAOS_CHANGES) --kills $(CHAOS_KILLS) --nodes $(CHAOS_NODES)
	BINLAKE_CHAOS_SINK_KILLS=$(CHAOS_SINK_KILLS) $(BIN)/pytest -m "chaos or peer" tests/sink/test_sink_kill.py \
		tests/bench/test_faust_peer.py

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache build *.egg-info
	find . -name '*.cpython-*.so' -not -path './.venv*' -delete
	rm -f $(JVM_JAR)

# ---------------------------------------------------------------- deployment tools
# Installed from the package registries into $(TOOLS), outside the clone, so a new clone on the same
# machine (CI's) finds them built: each lands in a folder named after its version, then is linked into
# $(TOOLS)/bin. On a new machine the first `make tools` takes a few minutes (mostly compiling helm and
# compose on 2 cores); after that, nothing. Versions here; the checks are in tests/deploy.
TOOLS ?= $(HOME)/.cache/binlake/tools
HELM_VERSION := v3.22.0
KUBECONFORM_VERSION := v0.8.0
COMPOSE_VERSION := v2.40.3
PROMETHEUS_OPERATOR_VERSION := v0.85.0
# The S3-compatible server of the s3a:// test (tests/deploy/test_deploy_s3.py, make test-deploy): an S3
# gateway over a folder.
VERSITYGW_VERSION := v1.8.0
KUBERNETES_SCHEMA := v1.37.0
TOOLS_PYTHON_PACKAGES := pyyaml==6.0.4 kubernetes-validate==1.37.0 kubeflow-spark-api==2.4.0
HELM := $(TOOLS)/helm-$(HELM_VERSION)/helm
KUBECONFORM := $(TOOLS)/kubeconform-$(KUBECONFORM_VERSION)/kubeconform
COMPOSE := $(TOOLS)/compose-$(COMPOSE_VERSION)/docker-compose
VERSITYGW := $(TOOLS)/versitygw-$(VERSITYGW_VERSION)/versitygw
TOOLS_VENV := $(TOOLS)/venv-$(firstword $(shell echo '$(TOOLS_PYTHON_PACKAGES)' | sha256sum))
SCHEMAS := $(TOOLS)/schemas-$(KUBERNETES_SCHEMA)-$(PROMETHEUS_OPERATOR_VERSION)

tools: $(HELM) $(KUBECONFORM) $(COMPOSE) $(SCHEMAS)/.done $(TOOLS)/bin/promtool
	mkdir -p $(TOOLS)/bin
	ln -sfn $(HELM) $(TOOLS)/bin/helm
	ln -sfn $(KUBECONFORM) $(TOOLS)/bin/kubeconform
	ln -sfn $(COMPOSE) $(TOOLS)/bin/docker-compose
	ln -sfn $(SCHEMAS) $(TOOLS)/schemas

$(HELM):
	GOBIN=$(dir $@) GOFLAGS=-buildvcs=false go install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

$(VERSITYGW):
	GOBIN=$(dir $@) GOFLAGS=-buildvcs=false go install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

# make test-deploy's tools besides those: the S3 server.
deploy-tools: tools $(VERSITYGW)
	ln -sfn $(VERSITYGW) $(TOOLS)/bin/versitygw

$(KUBECONFORM):
	GOBIN=$(dir $@) GOFLAGS=-buildvcs=false go install github.com/yannh/kubeconform/cmd/kubeconform@$(KUBECONFORM_VERSION)

# Compose's go.mod has replace/exclude directives, which `go install pkg@version` refuses: built inside a
# copy of its module.
$(COMPOSE):
	set -e; src=$$(go mod download -json github.com/docker/compose/v2@$(COMPOSE_VERSION) | sed -n 's/.*"Dir": "\(.*\)",/\1/p'); \
	work=$$(mktemp -d); cp -r "$$src/." "$$work"; chmod -R u+w "$$work"; \
	(cd "$$work" && GOFLAGS=-buildvcs=false go build -trimpath -o $@ ./cmd); rm -rf "$$work"

$(TOOLS_VENV)/bin/python:
	$(PYTHON) -m venv $(TOOLS_VENV)
	$(TOOLS_VENV)/bin/python -m pip install --quiet $(TOOLS_PYTHON_PACKAGES)

# The Kubernetes and CRD schemas kubeconform validates the chart with (deploy/tools/build_schemas.py).
$(SCHEMAS)/.done: $(TOOLS_VENV)/bin/python deploy/tools/build_schemas.py
	set -e; crds=$$(go mod download -json github.com/prometheus-operator/prometheus-operator@$(PROMETHEUS_OPERATOR_VERSION) | sed -n 's/.*"Dir": "\(.*\)",/\1/p'); \
	k8s=$$($(TOOLS_VENV)/bin/python -c 'import kubernetes_validate, os; print(os.path.dirname(kubernetes_validate.__file__))'); \
	rm -rf $(SCHEMAS); $(TOOLS_VENV)/bin/python deploy/tools/build_schemas.py $(SCHEMAS) \
	  "$$crds/example/prometheus-operator-crd" "$$k8s/kubernetes-json-schema/$(KUBERNETES_SCHEMA)-local-strict"
	touch $@

# promtool and the Prometheus server from Debian's packages (the integration test scrapes with the server).
$(TOOLS)/bin/promtool:
	mkdir -p $(TOOLS)/bin
	command -v promtool >/dev/null && command -v prometheus >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus; }
	ln -sfn $$(command -v promtool) $@
	ln -sfn $$(command -v prometheus) $(TOOLS)/bin/prometheus

# ---------------------------------------------------------------- images (podman, where no Docker engine runs)
# Debian's podman with runc (deploy/podman/containers.conf), the Debian base built by debootstrap (no
# container registry needed), layers cached between builds. The machine's own CA certificates go into the
# build (a proxy that signs TLS itself), so pip, cargo and Maven reach the registries from inside it.
export CONTAINERS_CONF := $(CURDIR)/deploy/podman/containers.conf
BASE_IMAGE ?= localhost/binlake-base:bookworm
IMAGE_TAG ?= dev
PODMAN_BUILD = podman build --format docker --layers -f deploy/Dockerfile --build-arg BASE_IMAGE=$(BASE_IMAGE) \
	--build-arg EXTRA_CA_CERTS="$$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null)"

podman:
	command -v podman >/dev/null && command -v runc >/dev/null && command -v debootstrap >/dev/null || \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman runc debootstrap; }

PODMAN_EXTRA = podman build --format docker --layers --build-arg BASE_IMAGE=$(BASE_IMAGE) \
	--build-arg EXTRA_CA_CERTS="$$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null)"
KAFKA_VERSION := $(shell sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' deploy/kafka/pom.xml)

# Below IMAGES_MIN_FREE_GB free in podman's storage, the stages earlier builds replaced and the leftovers of
# killed builds are removed first (deploy/podman/free-space.sh says why).
IMAGES_MIN_FREE_GB ?= 40
images: podman
	deploy/podman/free-space.sh $(IMAGES_MIN_FREE_GB)
	deploy/podman/base-image.sh $(BASE_IMAGE)
	$(PODMAN_BUILD) --target normalizer -t localhost/binlake-normalizer:$(IMAGE_TAG) .
	$(PODMAN_BUILD) --target sink -t localhost/binlake-sink:$(IMAGE_TAG) .
	$(PODMAN_EXTRA) -f deploy/podman/kafka.Dockerfile -t localhost/binlake-kafka:$(KAFKA_VERSION) .
	$(PODMAN_EXTRA) -f deploy/podman/prometheus.Dockerfile -t localhost/binlake-prometheus:$(IMAGE_TAG) .

# The deployment run for real (docs/operations.md, Checks): the images, podman's Docker API on a socket
# of its own, the compose stack tests (test_deploy_compose_stack.py, _cluster.py: 3 Kafka nodes), the sink on an S3
# server (test_deploy_s3.py), the Testcontainers broker. CI (.ci/run) runs it after `make test`.
PODMAN_SOCKET ?= /tmp/binlake-podman.sock
test-deploy: images deploy-tools $(NATIVE)
	set -e; podman system service --time=0 unix://$(PODMAN_SOCKET) & service=$$!; \
	deploy/podman/healthchecks.sh & checks=$$!; \
	trap 'kill $$service $$checks' EXIT; for i in $$(seq 50); do [ -S $(PODMAN_SOCKET) ] && break; sleep 0.2; done; \
	PATH="$(TOOLS)/bin:$$PATH" BINLAKE_TOOLS_DIR="$(TOOLS)" DOCKER_HOST=unix://$(PODMAN_SOCKET) \
	BINLAKE_DEPLOY_STACK=1 TESTCONTAINERS_RYUK_DISABLED=true \
	BINLAKE_NORMALIZER_IMAGE=localhost/binlake-normalizer:$(IMAGE_TAG) BINLAKE_SINK_IMAGE=localhost/binlake-sink:$(IMAGE_TAG) \
	BINLAKE_KAFKA_IMAGE=localhost/binlake-kafka:$(KAFKA_VERSION) BINLAKE_PROMETHEUS_IMAGE=localhost/binlake-prometheus:$(IMAGE_TAG) \
	$(BIN)/pytest tests/deploy/test_deploy_compose_stack.py tests/deploy/test_deploy_compose_cluster.py tests/deploy/test_deploy_s3.py; \
	PATH="$(TOOLS)/bin:$$PATH" DOCKER_HOST=unix://$(PODMAN_SOCKET) TESTCONTAINERS_RYUK_DISABLED=true \
	BINLAKE_TESTCONTAINERS=1 BINLAKE_TESTCONTAINERS_KAFKA_IMAGE=localhost/binlake-kafka:$(KAFKA_VERSION) \
	$(BIN)/pytest tests/deploy/test_deploy_testcontainers.py

# ---------------------------------------------------------------- Kubernetes, for real (deploy/k8s)
# A single-node Kubernetes made by the run (deploy/k8s/cluster.sh: etcd, the control plane, containerd, the
# kubelet, kube-proxy, a CNI bridge; certificates of its own; everything stopped by pid at the end). Its
# binaries are built from the Go module proxy into ~/.cache/binlake/k8s-<version>/bin once per machine
# (deploy/k8s/build.sh: 15-30 minutes on 2 cores the first time, nothing after), under nice: the
# machine is shared. The pods' images come from podman's store, imported into containerd (no registry).
K8S_HELLO_IMAGE := localhost/binlake-hello:$(IMAGE_TAG)
K8S_S3_IMAGE := localhost/binlake-s3:$(IMAGE_TAG)
k8s-tools:
	nice -n 19 deploy/k8s/build.sh

K8S_IMAGES := localhost/binlake-normalizer:$(IMAGE_TAG) localhost/binlake-sink:$(IMAGE_TAG) localhost/binlake-kafka:$(KAFKA_VERSION) $(K8S_S3_IMAGE)
test-k8s: images k8s-tools deploy-tools $(NATIVE)
	$(PODMAN_EXTRA) -f deploy/k8s/images/hello.Containerfile -t $(K8S_HELLO_IMAGE) deploy/k8s/images
	$(PODMAN_EXTRA) -f deploy/k8s/images/s3.Containerfile -t $(K8S_S3_IMAGE) $(dir $(VERSITYGW))
	PATH="$(TOOLS)/bin:$$PATH" BINLAKE_TOOLS_DIR="$(TOOLS)" BINLAKE_K8S=1 BINLAKE_K8S_HELLO_IMAGE=$(K8S_HELLO_IMAGE) BINLAKE_K8S_S3_IMAGE=$(K8S_S3_IMAGE) \
	BINLAKE_K8S_IMAGES="$(K8S_IMAGES)" BINLAKE_NORMALIZER_IMAGE=localhost/binlake-normalizer:$(IMAGE_TAG) \
	BINLAKE_SINK_IMAGE=localhost/binlake-sink:$(IMAGE_TAG) BINLAKE_KAFKA_IMAGE=localhost/binlake-kafka:$(KAFKA_VERSION) \
	$(BIN)/pytest tests/k8s
