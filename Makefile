# Tributary build. `make test` is what CI runs (through .ci/run): it installs
# what the tests need, starts the servers they use, runs every test and stops
# the servers again.

GO        ?= go
BIN       := bin/tributary
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -X main.version=$(VERSION)
# Packages with concurrency get the race detector.
RACE_PKGS := ./broker/...
TEST_TIMEOUT ?= 15m

.PHONY: all build test test-unit deps fmt vet bench demo clean

all: build

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/tributary

# deps installs the third-party programs the tests drive (kcat, ZooKeeper, ...).
deps:
	bash scripts/install-deps.sh

test: deps build vet
	bash scripts/with-servers.sh $(MAKE) --no-print-directory test-unit

# test-unit runs the Go tests; servers must already be running (see with-servers.sh).
test-unit:
	$(GO) test -count=1 -timeout $(TEST_TIMEOUT) $$($(GO) list ./... | grep -v '/broker') 
	$(GO) test -count=1 -race -timeout $(TEST_TIMEOUT) $(RACE_PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2x ./... 

clean:
	rm -rf bin
