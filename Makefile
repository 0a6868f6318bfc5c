# replog — the two commands a fresh clone needs are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
REPLOG := $(VENV)/bin/replog
STAMP := $(VENV)/.installed
APT_STAMP := $(VENV)/.system-packages
NODE_CLIENT := clients/node
NODE_STAMP := $(NODE_CLIENT)/node_modules/.installed
IMAGES_STAMP := $(VENV)/.test-images
DEMO_DIR ?= .replog

SPARK_DEMO_DIR ?= .replog-spark

.PHONY: setup system-packages bytecode demo spark-demo bench-spark test test-fast proto proto-release clients lint down bench chaos clean dashboards dashboards-preview

setup: $(STAMP) $(NODE_STAMP) $(IMAGES_STAMP)

# ZooKeeper's server jar and a headless Java come from Debian's packages, and so do a C
# compiler and Python's headers for the consumer's record decoder when they are missing, and
# podman (with runc) and debootstrap, which tests/chart uses to build the image and run the
# chart's pods, Prometheus (with promtool) for `replog dev up --monitoring` and
# tests/monitoring, and Node.js with npm for the Node client (clients/node, tests/clients). Debian would start Prometheus as a system service on install: a
# policy-rc.d keeps it from starting, for replog runs its own. The Makefile is a
# prerequisite, so a package added here is installed on a machine set up before.
$(APT_STAMP): Makefile
	@if ! command -v java >/dev/null 2>&1 || [ ! -f /usr/share/java/zookeeper.jar ]; then \
	  echo "installing the system packages: zookeeper, default-jre-headless"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq zookeeper default-jre-headless >/dev/null; \
	fi
	@if ! command -v cc >/dev/null 2>&1 || ! $(PYTHON) -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then \
	  echo "installing the system packages: gcc, $(PYTHON)-dev"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq gcc $(PYTHON)-dev >/dev/null; \
	fi
	@if ! command -v podman >/dev/null 2>&1 || ! command -v runc >/dev/null 2>&1 || ! command -v debootstrap >/dev/null 2>&1; then \
	  echo "installing the system packages: podman, runc, debootstrap"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq podman runc debootstrap >/dev/null; \
	fi
	@if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then \
	  echo "installing the system package: prometheus (not started as a service)"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  POLICY=/usr/sbin/policy-rc.d; ADDED=; \
	  if [ ! -e $$POLICY ]; then printf '#!/bin/sh\nexit 101\n' | $$SUDO tee $$POLICY >/dev/null && $$SUDO chmod +x $$POLICY && ADDED=1; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq prometheus >/dev/null; \
	  STATUS=$$?; [ -n "$$ADDED" ] && $$SUDO rm -f $$POLICY; exit $$STATUS; \
	fi
	@if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then \
	  echo "installing the system packages: nodejs, npm"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nodejs npm >/dev/null; \
	fi
	@mkdir -p $(VENV) && touch $@

$(STAMP): pyproject.toml setup.py replog/protocol/_records.c | $(APT_STAMP)
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH"; exit 1; }
	@[ -x $(PY) ] || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,spark]'
	@touch $@

# What tests/chart builds the image from and that does not change with replog's code, as pulling base
# images would be elsewhere: a Debian bookworm base image (debootstrap), the wheels of the
# dependencies and the ZooKeeper image, in podman's store and ~/.cache/replog. Where podman cannot run
# containers it says why, and the chart's pod tests are skipped.
$(IMAGES_STAMP): pyproject.toml tests/chart/images.py tests/chart/zookeeper.Containerfile | $(STAMP)
	$(PY) -m tests.chart.images
	@touch $@

# The Node client's packages, exactly as package-lock.json pins them.
$(NODE_STAMP): $(NODE_CLIENT)/package.json $(NODE_CLIENT)/package-lock.json | $(APT_STAMP)
	@node -e 'process.exit(Number(process.versions.node.split(".")[0]) < 18 ? 1 : 0)' || { \
	  echo "clients/node needs Node.js 18 or later; this node is $$(node --version)"; exit 1; }
	cd $(NODE_CLIENT) && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# Regenerate replog/api from proto/ (the committed copy is checked by tests/unit/test_api_generated.py).
proto: setup
	$(PY) -m replog.api.generate

# Regenerate helm/replog/dashboards/*.json and helm/replog/rules/replog.rules.yaml from
# replog/monitoring (the committed files are checked by tests/monitoring).
dashboards: setup
	$(PY) -m replog.monitoring.generate

# Draw every dashboard's panels from the local cluster's Prometheus into build/dashboards-preview/*.png
# (start one with `replog dev up --monitoring`; DEMO_DIR picks the cluster).
dashboards-preview: setup
	$(PY) -m replog.monitoring.preview --data-dir $(DEMO_DIR) --out build/dashboards-preview

# Client code for other languages from proto/ (buf.gen.yaml): TypeScript under build/clients/ts
# (protoc-gen-es from npm), the descriptor set build/clients/replog-api.binpb, and Python's stubs
# as `make proto` makes them. docs/API.md has the recipe for Go and Java.
clients: proto
	$(VENV)/bin/buf generate
	$(VENV)/bin/buf build proto -o build/clients/replog-api.binpb
	@echo "TypeScript in build/clients/ts, descriptors in build/clients/replog-api.binpb, Python in replog/api"

# The wire is a contract: buf lint, and buf breaking against the API as last released.
lint: setup
	cd proto && ../$(VENV)/bin/buf lint && ../$(VENV)/bin/buf breaking --against released/replog-api.binpb

# At a release: the protos as they are become the API that later changes may add to but not break.
proto-release: setup
	$(VENV)/bin/buf build proto --exclude-source-info -o proto/released/replog-api.binpb

demo: bytecode
	$(REPLOG) dev down --data-dir $(DEMO_DIR) >/dev/null 2>&1 || true
	$(REPLOG) dev up --brokers 3 --controllers 2 --data-dir $(DEMO_DIR)
	$(REPLOG) dev status --data-dir $(DEMO_DIR)
	$(PY) -m replog.dev.tour --data-dir $(DEMO_DIR)
	@echo; echo "4. A topic replicated three ways, written with acks=all and read back:"
	@$(REPLOG) topics delete demo --data-dir $(DEMO_DIR) >/dev/null 2>&1 || true  # an earlier run's
	$(REPLOG) topics create demo --partitions 3 --replication-factor 3 --config min.insync.replicas=2 --if-not-exists --data-dir $(DEMO_DIR)
	seq 1 5 | $(REPLOG) produce demo --acks all --report-offsets --data-dir $(DEMO_DIR)
	$(REPLOG) consume demo --from-beginning --max-messages 5 --timeout-ms 10000 --print-offsets --data-dir $(DEMO_DIR)
	$(REPLOG) topics describe demo --data-dir $(DEMO_DIR)
	@echo "The cluster keeps running; stop it with: $(REPLOG) dev down --data-dir $(DEMO_DIR)"

# The Spark job end to end (spark/jobs/orders_per_minute.py): a cluster, JSON orders fed into
# `orders`, the job in local mode (availableNow), and the per-minute totals it wrote.
spark-demo: bytecode
	$(REPLOG) dev down --data-dir $(SPARK_DEMO_DIR) >/dev/null 2>&1 || true
	$(REPLOG) dev up --brokers 3 --controllers 1 --data-dir $(SPARK_DEMO_DIR)
	$(REPLOG) topics create orders --partitions 3 --replication-factor 3 --if-not-exists --data-dir $(SPARK_DEMO_DIR)
	$(REPLOG) topics create orders-per-minute --partitions 1 --replication-factor 3 --if-not-exists --data-dir $(SPARK_DEMO_DIR)
	$(PY) -m replog.spark.jobs.orders_feed --data-dir $(SPARK_DEMO_DIR)
	$(PY) -m replog.spark.jobs.orders_per_minute --data-dir $(SPARK_DEMO_DIR) --checkpoint $(SPARK_DEMO_DIR)/checkpoint
	@echo; echo "The totals per minute, as the job wrote them to orders-per-minute:"
	$(REPLOG) consume orders-per-minute --from-beginning --max-messages 5 --timeout-ms 10000 --data-dir $(SPARK_DEMO_DIR)
	@echo "The cluster keeps running; stop it with: $(REPLOG) dev down --data-dir $(SPARK_DEMO_DIR)"

# The Spark reader against Spark's own parquet reader on the same rows, and the exactly-once sink
# against the at-least-once one (bench/bench_spark.py;
# figures in docs/BENCHMARKS.md).
bench-spark: setup
	$(PY) bench/bench_spark.py

down: setup
	$(REPLOG) dev down --data-dir $(DEMO_DIR)

# pytest exits 5 when it collects no test: that is a failure here too, said plainly.
# Every cluster member and command a test or demo starts is a Python process importing replog. Where
# Python writes no bytecode (PYTHONDONTWRITEBYTECODE is set), each would compile replog's modules
# anew, about 0.4 s of CPU apiece; compiled here once, they load from __pycache__ (compileall writes
# only what changed).
bytecode: setup
	@$(PY) -m compileall -q replog services spark >/dev/null

# The tests that start no cluster (about 3 minutes of CPU) run beside the ones that do, at a lower
# priority, on what CPU the clusters leave idle; their report follows the others'.
ALONE_TESTS = tests/core tests/protocol tests/sim tests/storage tests/unit tests/client
test: bytecode
	@alone_log=$$(mktemp); trap 'kill $$alone 2>/dev/null; rm -f $$alone_log' EXIT; trap 'exit 130' INT TERM; \
	nice -n 15 $(PY) -m pytest -q -p no:cacheprovider --durations=5 $(ALONE_TESTS) >$$alone_log 2>&1 & alone=$$!; \
	$(PY) -m pytest -q --durations=15 $(addprefix --ignore=,$(ALONE_TESTS)) tests; rc=$$?; \
	wait $$alone; alone_rc=$$?; \
	echo; echo "== the tests that start no cluster, run beside them ($(ALONE_TESTS)):"; cat $$alone_log; \
	for code in $$rc $$alone_rc; do \
	  if [ $$code -eq 5 ]; then echo "no tests were collected"; exit 1; fi; done; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; exit $$alone_rc

test-fast: bytecode
	@$(PY) -m pytest -q -m "not slow" tests

# The whole chaos matrix on real clusters (about 10 minutes; tests/chaos), then 1,000 seeds of each
# of the simulator's runs (about 6 minutes; `make test` runs 300, 100 and 60), then the long form of
# the fuzzing of every RPC (tests/integration/test_security.py: 300 messages per RPC). Cutting brokers off
# needs root for network namespaces; without it those scenarios are skipped. Rewrites the results
# table in docs/RELIABILITY.md.
chaos: bytecode
	REPLOG_CHAOS=1 $(PY) -m pytest -q tests/chaos
	REPLOG_SIM_SEEDS=1000 $(PY) -m pytest -q tests/sim -k seed
	REPLOG_FUZZ_EXAMPLES=300 $(PY) -m pytest -q tests/integration/test_security.py -k every_rpc_survives

# replog side by side with NATS JetStream (bench/peers): Debian's nats-server and the nats-py client.
bench: setup
	@command -v nats-server >/dev/null 2>&1 || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq nats-server >/dev/null; }
	@$(PY) -c "import nats" 2>/dev/null || $(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) bench/peers/side_by_side.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis $(NODE_CLIENT)/node_modules
