# Denorm. Everything a target needs is installed by the target itself into .cache/ (ignored).
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
DDB := scripts/dynamodb-local.sh
FUNCTIONS := $(notdir $(wildcard functions/*))
GOTEST_FLAGS ?= -count=1 -timeout 12m

.PHONY: all build test test-unit vet demo clean ddb-fetch

all: build

## build: every functions/<name> to dist/<name>/bootstrap (linux/arm64) and dist/<name>.zip
build:
	@mkdir -p dist
	@for f in $(FUNCTIONS); do \
	  echo "build functions/$$f -> dist/$$f/bootstrap"; \
	  CGO_ENABLED=0 GOOS=linux GOARCH=arm64 $(GO) build -tags lambda.norpc -trimpath -ldflags='-s -w' \
	    -o dist/$$f/bootstrap ./functions/$$f; \
	  $(GO) run ./scripts/zipfile dist/$$f.zip dist/$$f/bootstrap; \
	done

vet:
	$(GO) vet ./...

## test: vet, unit and integration tests on one DynamoDB Local for the whole run
test: vet
	$(DDB) run -- $(GO) test $(GOTEST_FLAGS) ./...

## test-unit: the tests that need no emulator
test-unit:
	$(GO) test ./...

## demo: the local pipeline on DynamoDB Local with sample data
demo:
	$(DDB) run -- $(GO) run ./cmd/denorm demo

ddb-fetch:
	$(DDB) fetch

clean:
	rm -rf dist
