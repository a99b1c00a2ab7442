# Denorm. Everything a target needs is installed by the target itself into .cache/ (ignored).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
# The engine's module (the repository's root) is built and tested on its own, without the
# workspace (go.work): with it, the versions selected would be the workspace's, not the ones
# the root go.mod gives an app that requires the engine. infra/, examples/ and tools/ use it.
GO_ROOT := GOWORK=off $(GO)
DDB := scripts/dynamodb-local.sh
FUNCTIONS := $(notdir $(wildcard functions/*))
GOTEST_FLAGS ?= -count=1 -timeout 20m

.PHONY: all build test test-unit vet demo clean ddb-fetch

all: build

## build: every functions/<name> to dist/<name>/bootstrap (linux/arm64) and dist/<name>.zip
build:
	@mkdir -p dist
	@for f in $(FUNCTIONS); do \
	  echo "build functions/$$f -> dist/$$f/bootstrap"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO_ROOT) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o dist/$$f/bootstrap ./functions/$$f; \
	  $(GO_ROOT) run ./scripts/zipfile dist/$$f.zip dist/$$f/bootstrap; \
	done

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

## vet: go vet and staticcheck (pinned) over the engine, the function and the CLI
vet:
	$(GO_ROOT) vet ./...
	$(GO_ROOT) run $(STATICCHECK) ./...

## test: vet, unit and integration tests on one DynamoDB Local for the whole run, and the CDK app.
## Test binaries are built in parallel first; then two packages run at a time (-p 2): one
## package alone leaves part of two cores idle, the test and the emulator waiting on each
## other's round trips. ./internal/ops with ./cmd/denorm took 59 s together against 89 s one
## after the other; every package, 593 s against 761 s. The default table's smoke test runs
## first and verbosely, so the log shows the table and a stream record.
SMOKE_TEST := -run '^TestDefaultTableStreamsAWrite$$' ./internal/provision/
test: vet test-infra test-tools
	$(GO_ROOT) test -count=1 -run '^$$' ./... >/dev/null
	$(DDB) run -- bash -c "$(GO_ROOT) test -count=1 -v $(SMOKE_TEST) && $(GO_ROOT) test -p 2 $(GOTEST_FLAGS) ./..."

## tidy: `go mod tidy` in every module. They require each other at the version of the next
## release, which no proxy serves yet, and `go mod tidy` ignores go.work: tools/modproxy serves
## the tree's modules at that version from a local proxy directory for the run
.PHONY: tidy
tidy:
	cd tools/modproxy && $(GO) run . tidy

## test-tools: vet and test the modules under tools/ (the bench's chart, whose plotting
## library the engine's module does not require)
.PHONY: test-tools
test-tools:
	cd tools/benchplot && $(GO) vet ./... && $(GO) test -count=1 ./...

## test-unit: the tests that need no emulator
test-unit:
	$(GO_ROOT) test ./...

## demo: the local pipeline on DynamoDB Local with sample data; exits 0 only if it converged
demo:
	$(GO_ROOT) build -o dist/denorm ./cmd/denorm
	$(DDB) run -- dist/denorm demo

ddb-fetch:
	$(DDB) fetch

# --- benchmarks (docs/benchmarks.md) ---------------------------------------------------------
# Extra `denorm bench` flags, e.g. BENCH_ARGS="--reps 3 --workloads comment-storm,rename"
BENCH_ARGS ?=
# The latency model of the handlers' DynamoDB calls (docs/benchmarks.md) and the paced
# rate of the live writes, for lag: up to one partition's 1,000 writes per second.
BENCH_LATENCY ?= default
BENCH_RATE ?= 1000
BENCH_OUT ?= .cache/bench
BENCHSTAT := golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
.PHONY: bench

## bench: Denorm against a hand-written handler on DynamoDB Local with AWS's latency modelled (records/s per shard, lag, dollars per million writes, critical path), then the pure core's Go benchmarks
bench:
	@mkdir -p $(BENCH_OUT) dist
	$(GO_ROOT) build -o dist/denorm ./cmd/denorm
	$(DDB) run -- dist/denorm bench --latency $(BENCH_LATENCY) --rate $(BENCH_RATE) --out $(BENCH_OUT) $(BENCH_ARGS)
	cd tools/benchplot && $(GO) run . $(abspath $(BENCH_OUT))/bench.json $(abspath $(BENCH_OUT))/bench.png
	$(GO_ROOT) test -run='^$$' -bench=. -benchmem -benchtime=2s -count=6 ./internal/record ./internal/plan ./internal/bench | tee $(BENCH_OUT)/core.txt
	$(GO_ROOT) run $(BENCHSTAT) $(BENCH_OUT)/core.txt

## soak: the reliability suite's long run (tests/reliability): SOAK_OPS operations with every
## fault on, the application's own writes to counter targets included; passes only with zero
## drift. `make soak SOAK_OPS=5000` for a short one.
SOAK_OPS ?= 100000
SOAK_SEED ?= 1
.PHONY: soak
soak:
	DENORM_SOAK_OPS=$(SOAK_OPS) DENORM_SOAK_SEED=$(SOAK_SEED) $(DDB) run -- \
	  env $(GO_ROOT) test -count=1 -timeout 0 -run '^TestSoak$$' -v ./tests/reliability/

## fuzz: every fuzz target for FUZZTIME each (no emulator needed). Minimizing a new input is
## capped: Go's default (60 s) can spend a whole run shrinking one large rules file or event.
FUZZTIME ?= 60s
FUZZ_TARGETS := internal/keys:FuzzTemplate internal/rules:FuzzParse internal/record:FuzzDecode \
  internal/record:FuzzSplitEvent internal/plan:FuzzPlan internal/plan:FuzzDistinctRef internal/esm:FuzzFilter
.PHONY: fuzz
fuzz:
	@for t in $(FUZZ_TARGETS); do \
	  echo "fuzz: $${t#*:} in ./$${t%%:*} for $(FUZZTIME)"; \
	  $(GO_ROOT) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./$${t%%:*} || exit 1; \
	done

clean:
	rm -rf dist

# --- infrastructure (infra/, localstack/) ---------------------------------------------------
CDK := infra/cdk.sh
LOCALSTACK := localstack/localstack.sh
# Extra cdk arguments, e.g. CDK_ARGS="-c dev=true -c stack=Denorm-dev -c rules=../rules/social.yaml"
CDK_ARGS ?=

# Example CDK apps, each its own Go module using the construct as another app would.
EXAMPLES := $(patsubst %/go.mod,%,$(wildcard examples/*/go.mod))

.PHONY: test-infra synth synth-example deploy localstack-up localstack-deploy localstack-smoke localstack-down

## test-infra: vet, staticcheck and test the CDK app and construct (synth assertions, cdk-nag), then build,
## vet and synthesize every example app; then tools/modproxy, whose test runs `cdk synth` of
## examples/existing-table outside the repository, its modules downloaded at the version its
## go.mod requires from a local proxy serving this tree, and the function built by the
## construct; no AWS account (Go, Node, the Go module proxy and npm)
# -trimpath: the CDK bindings are compiled once for all three, although the outside-app test
# has a module cache of its own: without it a package's directory is part of its build cache key.
test-infra:
	cd infra && $(GO) vet -trimpath ./... && $(GO) run $(STATICCHECK) ./... && $(GO) test -trimpath -count=1 ./...
	@for d in $(EXAMPLES); do \
	  echo "cd $$d && $(GO) vet -trimpath ./... && $(GO) test -trimpath -count=1 ./..."; \
	  (cd $$d && $(GO) vet -trimpath ./... && $(GO) test -trimpath -count=1 ./...) || exit 1; \
	done
	cd tools/modproxy && $(GO) vet ./... && $(GO) test -count=1 -timeout 20m ./...

## synth: synthesize the stack into infra/cdk.out (pinned aws-cdk CLI from npm); the construct
## builds the function from this tree (CDK_ARGS="-c code=dist/..." takes a built one instead)
synth:
	$(CDK) synth -q --no-notices $(CDK_ARGS)
	@echo "synth: cloud assembly in infra/cdk.out"

## synth-example: synthesize examples/existing-table into its cdk.out, the function built by
## the construct; name the table: CDK_ARGS="-c tableName=NAME -c streamArn=ARN"
synth-example:
	CDK_APP_DIR=examples/existing-table $(CDK) synth -q --no-notices $(CDK_ARGS)
	@echo "synth: cloud assembly in examples/existing-table/cdk.out"

## deploy: synthesize and deploy with the environment's AWS credentials (once per account/region: infra/cdk.sh bootstrap)
deploy:
	$(CDK) deploy --no-notices $(CDK_ARGS)

## localstack-up / -deploy / -smoke / -down: the same stack on LocalStack (needs Docker, see localstack/README.md)
localstack-up:
	$(LOCALSTACK) up
localstack-deploy:
	$(LOCALSTACK) deploy
localstack-smoke:
	$(LOCALSTACK) smoke
localstack-down:
	$(LOCALSTACK) down
