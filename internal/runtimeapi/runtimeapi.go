// Package runtimeapi runs a real Lambda `bootstrap` binary locally behind the Lambda Runtime
// API (2018-06-01), so the compiled stream processor is exercised exactly as Lambda runs it:
// one invocation at a time, a deadline per invocation, errors and panics reported through
// the API, and a fresh process after a crash or a timeout.
package runtimeapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Defaults, as Lambda has them.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultInitTimeout = 10 * time.Second
	DefaultMemoryMB    = 128
	// MaxPayload and MaxResponse are Lambda's limits for a synchronous invocation.
	MaxPayload  = 6 * 1024 * 1024
	MaxResponse = 6 * 1024 * 1024
)

// Config describes the function.
type Config struct {
	// BinaryPath is the executable, built for this machine (for Lambda it is `bootstrap`).
	BinaryPath string
	// Env is the process environment besides the variables Lambda sets; as in Lambda,
	// nothing is inherited: pass os.Environ() (or a selection) to hand on PATH, endpoints
	// or credentials. Entries here override Lambda's defaults, except AWS_LAMBDA_RUNTIME_API.
	Env []string
	// Timeout bounds one invocation: default 30s.
	Timeout time.Duration
	// InitTimeout bounds the start of a process until it asks for its first invocation:
	// default 10s.
	InitTimeout time.Duration
	// MemoryMB is reported to the function (AWS_LAMBDA_FUNCTION_MEMORY_SIZE); not enforced.
	MemoryMB int
	// FunctionName is AWS_LAMBDA_FUNCTION_NAME: default "denorm-local".
	FunctionName string
	// Region is AWS_REGION and the invoked ARN's region: default "us-east-1".
	Region string
	// Output receives the process's stdout and stderr. Default: each line is logged at Info
	// through Logger.
	Output io.Writer
	// Logger receives the runtime's own logs: default slog.Default().
	Logger *slog.Logger
}

// Errors a failed invocation wraps (see FunctionError).
var (
	// ErrTimeout: the invocation outlived Timeout, or the process InitTimeout.
	ErrTimeout = errors.New("runtimeapi: timed out")
	// ErrExited: the process ended without answering.
	ErrExited = errors.New("runtimeapi: function process exited")
	// ErrClosed: the Function was closed.
	ErrClosed = errors.New("runtimeapi: function closed")
	// ErrPayloadTooLarge: the request exceeds MaxPayload; Lambda refuses it unseen.
	ErrPayloadTooLarge = errors.New("runtimeapi: request payload exceeds 6 MB")
)

// FunctionError is a failed invocation, as Lambda reports it: the function's errorType and
// errorMessage (from /error, /init/error, or a streamed response's trailers), or the
// runtime's own Sandbox.Timedout and Runtime.ExitError.
type FunctionError struct {
	Type    string
	Message string
	// StackTrace is the function's stackTrace JSON, when it sent one.
	StackTrace []byte
	cause      error
}

func (e *FunctionError) Error() string {
	if e.Type == "" {
		return "function error: " + e.Message
	}
	return "function error: " + e.Type + ": " + e.Message
}

// Unwrap returns ErrTimeout or ErrExited for failures of the environment, nil for errors the
// function reported.
func (e *FunctionError) Unwrap() error { return e.cause }

// Function is a running bootstrap binary. It satisfies esm.Invoker.
type Function struct {
	cfg Config
	log *slog.Logger

	invoking sync.Mutex // one invocation at a time, like one execution environment

	mu      sync.Mutex // guards env and closing
	env     *environment
	closing chan struct{}
	closed  bool
	stopped chan struct{} // closed when Close has stopped the process
	stopCtx func() bool
}

// Start launches the binary and waits until it asks for its first invocation (its init
// phase passed). The function runs until Close or until ctx ends.
func Start(ctx context.Context, cfg Config) (*Function, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Function{cfg: cfg, log: cfg.Logger, closing: make(chan struct{}), stopped: make(chan struct{})}
	if _, err := f.ensure(ctx); err != nil {
		f.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { f.Close() })
	f.mu.Lock()
	f.stopCtx = stop
	f.mu.Unlock()
	return f, nil
}

func (c Config) withDefaults() (Config, error) {
	if c.BinaryPath == "" {
		return c, errors.New("runtimeapi: BinaryPath is required")
	}
	st, err := os.Stat(c.BinaryPath)
	if err != nil {
		return c, fmt.Errorf("runtimeapi: function binary: %w", err)
	}
	if st.IsDir() {
		return c, fmt.Errorf("runtimeapi: function binary %s is a directory", c.BinaryPath)
	}
	if c.Timeout < 0 || c.InitTimeout < 0 || c.MemoryMB < 0 {
		return c, errors.New("runtimeapi: Timeout, InitTimeout and MemoryMB must not be negative")
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.InitTimeout == 0 {
		c.InitTimeout = DefaultInitTimeout
	}
	if c.MemoryMB == 0 {
		c.MemoryMB = DefaultMemoryMB
	}
	if c.FunctionName == "" {
		c.FunctionName = "denorm-local"
	}
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c, nil
}

// FunctionARN is the ARN the function sees as its invoked ARN.
func (f *Function) FunctionARN() string {
	return "arn:aws:lambda:" + f.cfg.Region + ":000000000000:function:" + f.cfg.FunctionName
}

// Close stops the process (SIGTERM, then SIGKILL after 500ms, as Lambda shuts an
// environment down) and the API server. An invocation in progress fails with ErrClosed.
// Every call returns once the process is gone.
func (f *Function) Close() error {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		<-f.stopped
		return nil
	}
	f.closed = true
	close(f.closing)
	env := f.env
	f.env = nil
	stop := f.stopCtx
	f.mu.Unlock()
	if stop != nil {
		stop()
	}
	if env != nil {
		env.shutdown(500 * time.Millisecond)
	}
	close(f.stopped)
	return nil
}
