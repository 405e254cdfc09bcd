# Run `make` (or `make help`) for the list of targets.
#
# Every target that needs PostgreSQL runs under tools/devpg, which starts a
# throwaway server from the machine's own binaries (no Docker) unless
# TEST_DATABASE_URL already names one. devpg is built to bin/devpg rather than
# run with `go run`, which would turn every exit code into 1 and not relay
# SIGTERM.

GO       ?= go
FUZZTIME ?= 30s
DEVPG    := bin/devpg

.DEFAULT_GOAL := help
.PHONY: help build test demo demo-mail bench bench-go lint fuzz clean FORCE

help: ## show this list of targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-9s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# What `scan version` reports for a build from this tree.
LDFLAGS  := -X main.version=$(shell git describe --tags --always --dirty 2>/dev/null) \
            -X main.commit=$(shell git rev-parse HEAD 2>/dev/null) \
            -X main.buildTime=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)
# bin/scan is built as the Dockerfile builds the image: no cgo (no libc
# mapped: 1.5 MiB less resident), trimmed paths, no symbol table, so that
# what `make bench` measures is what a pod runs.
GOBUILD  := CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS) -s -w"

build: ## build bin/scan as the image does (static, trimmed), stamped with version, commit and build time
	$(GOBUILD) -o bin/scan ./cmd/scan

$(DEVPG): FORCE
	@$(GO) build -o $@ ./tools/devpg

# cmd/scan runs the real binary against real peers (Patroni, PgBouncer, SMTP,
# fleet rates at their real pace): minutes, more on a loaded machine, so
# the per-package limit is raised from go test's default 10m.
test: $(DEVPG) ## run every test, with -race, against a throwaway PostgreSQL
	$(DEVPG) -- $(GO) test -race -count=1 -timeout 30m ./...

demo: $(DEVPG) ## migrate, seed 3000 subscriptions, run twice into a temp outbox
	$(DEVPG) -- ./scripts/demo.sh

demo-mail: $(DEVPG) ## the demo over real SMTP into a local Mailpit (loopback); prints its URL
	$(DEVPG) -- ./scripts/demo-mail.sh

bench: ## the pass against PostgreSQL's own ceiling, same run (BENCH_N=1000000 for 1M; docs/BENCHMARKS.md)
	$(GOBUILD) -o bin/scan ./cmd/scan
	$(GOBUILD) -tags noproof -o bin/scan-noproof ./cmd/scan
	$(GO) build -o bin/bench ./tools/bench
	./bin/bench -scan bin/scan -scan-noproof bin/scan-noproof

bench-go: $(DEVPG) ## the Go benchmarks (go test -bench) against a durable (fsync on) PostgreSQL
	$(DEVPG) -durable -- $(GO) test -run '^$$' -bench . -benchmem ./...

lint: ## gofmt -l must list nothing, then go vet and staticcheck (pinned in go.mod as a tool)
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

fuzz: ## run every Fuzz target for FUZZTIME (default 30s) each
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' "$$pkg" | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f ($(FUZZTIME))"; \
	    $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) "$$pkg"; \
	  done; \
	done

clean: ## remove bin/ and the default outbox/
	rm -rf bin outbox
