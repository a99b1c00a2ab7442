// Package processor builds Denorm's stream processor: the executor over a DynamoDB client
// and the handler over compiled rules. The Lambda function, `denorm local`, the chaos suite
// and the bench all build it here, so each of them runs the processor as it is deployed.
package processor

import (
	"io"
	"log/slog"

	"github.com/denorm/denorm/internal/apply"
	"github.com/denorm/denorm/internal/handler"
	"github.com/denorm/denorm/internal/rules"
)

// Options are what a runner of the processor chooses. Zero values are what the Lambda
// function runs with unless its environment says otherwise.
type Options struct {
	// Logger receives the handler's line per batch and, unless Apply.Logger is set, the
	// executor's logs (default slog.Default()).
	Logger *slog.Logger
	// Metrics receives one CloudWatch EMF line per invocation (the function: os.Stdout;
	// nil: none).
	Metrics io.Writer
	// FunctionName is the metrics' Function dimension (default denorm-streamproc).
	FunctionName string
	// Apply tunes the executor: page sizes, pull reads, deadlines (zero: its defaults).
	Apply apply.Options
}

// New returns the stream processor's handler: it applies set's rules to table, writing
// through db. db is the DynamoDB client, or a wrapper of it that injects faults or counts
// calls.
func New(db apply.API, table string, set *rules.Set, opt Options) *handler.Handler {
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	if opt.Apply.Logger == nil {
		opt.Apply.Logger = opt.Logger
	}
	exec := apply.New(db, table, set, opt.Apply)
	return handler.New(set, exec, handler.Options{Logger: opt.Logger, Metrics: opt.Metrics, FunctionName: opt.FunctionName})
}
