# Tributary build. `make test` is what CI runs (through .ci/run): it installs
# what the tests need, starts the servers they use, runs every test and stops
# the servers again.

GO        ?= go
BIN       := bin/tributary
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
MODULE    := github.com/tributary/tributary
# Packages with concurrency get the race detector (RACE_RE: the same, as a
# pattern over import paths).
RACE_PKGS := ./broker/... ./client/... ./internal/coord/... ./audit/... ./mirror/... ./loader/... ./jobs/... ./hours/... ./internal/filesys/... ./icetable/...
RACE_RE   := ^$(MODULE)/(broker|client|internal/coord|audit|mirror|loader|jobs|hours|internal/filesys|icetable)(/|$$)
# Packages with ZooKeeper-ensemble tests (built without -race, see test-unit).
ENSEMBLE_PKGS := ./broker/... ./client/... ./internal/coord/...
TEST_TIMEOUT ?= 25m
# Extra `go test` flags, e.g. make test TEST_FLAGS='-run TestEnsemble -v'.
TEST_FLAGS ?=
# bench-vs-kafka: records per run and runs per system (medians are reported).
BENCH_RECORDS ?= 2000000
BENCH_RUNS    ?= 3

# docs regenerates what is generated in docs/: the CLI reference (docs/cli)
# from the commands themselves, and the package layout (docs/layout.md) from
# go list. The docs tests (internal/docstest,
# TestCLIReferenceUpToDate) fail when it is stale.
.PHONY: docs
docs:
	$(GO) run ./cmd/tributary gen-docs --dir docs/cli
	bash scripts/package-layout.sh > docs/layout.md

# docs-check runs the docs tests that need no server (the examples need the
# test ZooKeeper and run in make test).
.PHONY: docs-check
docs-check:
	$(GO) test -count=1 -run 'TestMarkdownBlocks|TestPackageTable|TestZooKeeperTable|TestLayoutUpToDate|TestComparePackages|TestParseMarkers|TestCheckProperties|TestRewrite|TestSessionFailsOnBrokenBlock|TestBrokenExampleFails' ./internal/docstest
	$(GO) test -count=1 -run 'TestCLIReference|TestDocsUseRealFlags|TestCheckCommandLine|TestREADMENamesEveryCommand' ./cmd/tributary

.PHONY: all build test test-unit deps fmt vet bench bench-vs-kafka bench-cleaner bench-vs-mm2 demo demo-secure soak clean fuzz-broker

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tributary

# deps installs the third-party programs the tests drive (kcat, ZooKeeper, ...).
deps:
	bash scripts/install-deps.sh

# The tests that run tributary processes use the binary build just made
# (testproc.EnvBinary) rather than each linking one.
test: deps build vet
	TRIBUTARY_TEST_BINARY=$(CURDIR)/$(BIN) bash scripts/with-servers.sh $(MAKE) --no-print-directory test-unit

# test-unit runs the Go tests; servers must already be running (see
# with-servers.sh). RACE_PKGS run under the race detector; their
# ZooKeeper-ensemble tests are built only without -race (written against
# go-zookeeper v1.0.4's reconnect race, see internal/coord/zkcoord/doc.go)
# and run in a job of their own, one package at a time since they stop
# ensemble members (no other test stops one), over the packages of
# ENSEMBLE_PKGS that have a TestXxxEnsembleXxx. Every package is a job of
# its own `go test` and the jobs run TEST_JOBS at a time in one queue,
# race and plain alike, so that the long ones overlap: TEST_FIRST starts
# first, longest first (from CI's times), the other packages follow
# in `go list` order. Every job runs even if one fails, so one CI log
# shows every failure; a job's output is printed when it ends.
TEST_JOBS  ?= 2
TEST_FIRST := broker broker/clustertest jobs/compact pipeline/tablestest pipeline/soak loader \
	pipeline icetable internal/testkit/icereader ensemble mirror broker/kafkacompat broker/partlog pipeline/typematrix jobs cmd/tributary \
	internal/network jobs/tables
test-unit:
	@all=$$($(GO) list ./...) || exit 1; \
	echo "$(GO) list -export -deps -test [-race] (builds every package first)"; \
	$(GO) list -export -deps -test ./... >/dev/null || exit 1; \
	$(GO) list -race -export -deps -test $(RACE_PKGS) >/dev/null || exit 1; \
	ens=$$($(GO) list -f '{{.ImportPath}} {{.Dir}}' $(ENSEMBLE_PKGS) | while read -r p d; do \
		if grep -qs '^func Test[^(]*Ensemble' "$$d"/*_test.go; then echo "$$p"; fi; done); \
	jobs=; \
	for p in $(TEST_FIRST); do \
		if [ "$$p" = ensemble ]; then [ -z "$$ens" ] || jobs="$$jobs ensemble"; continue; fi; \
		echo "$$all" | grep -qx "$(MODULE)/$$p" && jobs="$$jobs $(MODULE)/$$p"; \
	done; \
	for p in $$all; do \
		case " $$jobs " in *" $$p "*) ;; *) jobs="$$jobs $$p";; esac; \
	done; \
	echo "$(GO) test -count=1 [-race] -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) PKG, $(TEST_JOBS) at a time; RACE_PKGS with -race"; \
	echo "$(GO) test -count=1 -p 1 -run Ensemble -timeout $(TEST_TIMEOUT) $(TEST_FLAGS)" $$ens "(as one of the jobs)"; \
	logs=$$(mktemp -d); \
	printf '%s\n' $$jobs | ENS="$$ens" xargs -P $(TEST_JOBS) -I{} sh -c ' \
		logs=$$0; job=$$1; shift; log=$$(mktemp "$$logs/job.XXXXXX"); \
		if [ "$$job" = ensemble ]; then \
			set -- -p 1 -run Ensemble "$$@" $$ENS; \
		elif echo "$$job" | grep -q -E "$(RACE_RE)"; then \
			set -- -race "$$@" "$$job"; \
		else \
			set -- "$$@" "$$job"; \
		fi; \
		$(GO) test -count=1 -timeout $(TEST_TIMEOUT) "$$@" >"$$log" 2>&1; rc=$$?; \
		flock "$$logs" cat "$$log"; rm -f "$$log"; exit $$rc' "$$logs" {} $(TEST_FLAGS); \
	rc=$$?; rm -rf "$$logs"; \
	[ $$rc -eq 0 ] || { echo "make test-unit: some packages failed (FAIL lines above)"; exit 1; }

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x ./... 

# bench-vs-kafka runs the same `tributary bench` commands against Apache Kafka
# and our broker on this machine and prints one table of medians and ratios,
# with broker CPU per record; a second compares SASL_SSL with PLAINTEXT on both
# (BENCH_SECURE=0 skips it); then (BENCH_RF3=0 skips it) acks=all produce against three brokers of each,
# replication factor 3, min.insync.replicas=2.
bench-vs-kafka: build
	BENCH_RECORDS=$(BENCH_RECORDS) BENCH_RUNS=$(BENCH_RUNS) bash scripts/bench-vs-kafka.sh

# bench-cleaner produces the same keyed records (kcat, no compression) into a
# compacted topic on Apache Kafka and on our broker, lets each log cleaner
# clean it once, and prints the MB/s each cleaner reports, medians of
# BENCH_RUNS interleaved runs, with the ratio. Not part of test.
bench-cleaner: build
	BENCH_RUNS=$(BENCH_RUNS) bash scripts/bench-cleaner.sh

# bench-vs-mm2 mirrors the same 2,000,000 x 100 B records between two Apache
# Kafka brokers with MirrorMaker 2 (dedicated mode) and then with `tributary
# mirror`, and prints records/s and CPU-seconds with ratios. Not part of test.
bench-vs-mm2: build
	bash scripts/bench-vs-mm2.sh

# fuzz-broker sends FUZZ_BROKER_FRAMES mutated copies of recorded franz-go
# and kcat request frames to a broker process, then checks a real round trip
# and prints the broker's RSS and descriptor count (make test sends 100,000).
FUZZ_BROKER_FRAMES ?= 1000000
fuzz-broker:
	FUZZ_BROKER_FRAMES=$(FUZZ_BROKER_FRAMES) $(GO) test -count=1 -timeout 90m -run '^TestFuzzRecordedFrames$$' -v ./broker/

# demo runs the whole pipeline (two datacenters, mirror, analytics, loader,
# audit) in one process on a temporary directory for DEMO_DURATION, then
# proves every record was loaded exactly once and every audit window is
# complete; it needs no other service (no Java, no ZooKeeper).
DEMO_DURATION ?= 90s
demo: build
	DEMO_DURATION=$(DEMO_DURATION) bash scripts/demo.sh

# demo-secure is demo with every part secured (pipeline demo --secure):
# SASL_SSL with generated SCRAM users to every cluster, the mirror's target
# over SSL with a client certificate, SSL between brokers, the registry and
# dashboard over HTTPS with basic authentication; the same proof.
demo-secure: build
	DEMO_DURATION=$(DEMO_DURATION) DEMO_SECURE=1 bash scripts/demo.sh

# soak runs every part of the pipeline as its own process (3 clusters of 3
# brokers, a ZooKeeper ensemble and HDFS with 2 DataNodes of its own,
# registries, audit, mirrors, loaders, schedulers, load generators) for
# SOAK_DURATION at SOAK_RATE page views/s per datacenter under a seeded
# random fault schedule (SOAK_SEED replays one), then proves every
# acknowledged record was mirrored and loaded exactly once (scripts/soak.sh).
SOAK_DURATION ?= 10m
SOAK_RATE     ?= 200
soak: deps build
	SOAK_DURATION=$(SOAK_DURATION) SOAK_RATE=$(SOAK_RATE) bash scripts/soak.sh

clean:
	rm -rf bin
