package bench

import (
	"context"

	"github.com/denorm/denorm/internal/ddblocal"
)

// Emulator provides a DynamoDB Local endpoint for one run.
//
// A run on an instance that earlier runs filled (their items, their stream records) is not
// quite comparable with the first run on it, so by default the benchmark gives every run,
// and the ceiling, a fresh instance, warmed up the same way.
type Emulator interface {
	Start(ctx context.Context) (endpoint string, stop func(), err error)
}

// Shared is one endpoint for every run (tests; or --endpoint when a fresh instance per run
// is not wanted).
type Shared string

// Start returns the endpoint.
func (s Shared) Start(context.Context) (string, func(), error) { return string(s), func() {}, nil }

// Fresh starts a new DynamoDB Local per run with scripts/dynamodb-local.sh and stops it
// (waiting for the process to exit) when the run is done.
type Fresh struct {
	Script string // scripts/dynamodb-local.sh
}

// Start starts an instance and returns its URL.
func (f Fresh) Start(ctx context.Context) (string, func(), error) {
	return ddblocal.Start(ctx, f.Script)
}
