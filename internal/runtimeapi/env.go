package runtimeapi

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// environment is one process of the function and the API server it talks to. Each process
// gets its own listener, so a killed process's leftover requests cannot touch the next one.
type environment struct {
	f    *Function
	ln   net.Listener
	srv  *http.Server
	cmd  *exec.Cmd
	out  []*lineWriter // flushed when the process ends
	next chan *invocation

	ready     chan struct{} // closed at the first GET /next
	readyOnce sync.Once
	initErr   chan *FunctionError // from POST /init/error
	exited    chan struct{}       // closed once the process ended and exitErr is set
	exitErr   error
	closing   chan struct{} // closed when the environment shuts down: handlers return
	closeOnce sync.Once
	served    chan struct{} // closed when the server stopped

	mu       sync.Mutex
	inflight map[string]*invocation
}

// spawn starts a process with its own API server.
func (f *Function) spawn() (*environment, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("runtimeapi: listening: %w", err)
	}
	env := &environment{
		f: f, ln: ln, next: make(chan *invocation), ready: make(chan struct{}),
		initErr: make(chan *FunctionError, 1), exited: make(chan struct{}), closing: make(chan struct{}),
		served: make(chan struct{}), inflight: map[string]*invocation{},
	}
	env.srv = &http.Server{Handler: env.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(env.served)
		_ = env.srv.Serve(ln) // returns when shut down
	}()

	cmd := exec.Command(f.cfg.BinaryPath)
	cmd.Dir = filepath.Dir(f.cfg.BinaryPath)
	cmd.Env = f.environ(ln.Addr().String())
	// A child that keeps the output pipes open must not block Wait forever.
	cmd.WaitDelay = time.Second
	if f.cfg.Output != nil {
		cmd.Stdout, cmd.Stderr = f.cfg.Output, f.cfg.Output
	} else {
		stdout, stderr := &lineWriter{log: f.log, stream: "stdout"}, &lineWriter{log: f.log, stream: "stderr"}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		env.out = []*lineWriter{stdout, stderr}
	}
	if err := cmd.Start(); err != nil {
		env.closeServer()
		return nil, fmt.Errorf("runtimeapi: starting %s: %w", f.cfg.BinaryPath, err)
	}
	env.cmd = cmd
	f.log.Debug("runtimeapi: process started", "pid", cmd.Process.Pid, "api", ln.Addr().String())
	go func() {
		env.exitErr = cmd.Wait()
		for _, w := range env.out {
			w.flush()
		}
		// Log before signalling: once exited is closed, Close may return and the caller's
		// logger may be gone (a finished test's).
		f.log.Debug("runtimeapi: process ended", "pid", cmd.Process.Pid, "status", env.exitErr)
		close(env.exited)
		env.closeServer()
	}()
	return env, nil
}

// environ is the process environment: Lambda's variables, then Config.Env, then the API
// address, later entries winning.
func (f *Function) environ(api string) []string {
	c := f.cfg
	env := []string{
		"AWS_LAMBDA_FUNCTION_NAME=" + c.FunctionName,
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=" + strconv.Itoa(c.MemoryMB),
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/" + c.FunctionName,
		"AWS_LAMBDA_LOG_STREAM_NAME=" + time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + hex.EncodeToString(random(16)),
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"AWS_EXECUTION_ENV=AWS_Lambda_provided.al2023",
		"AWS_REGION=" + c.Region,
		"AWS_DEFAULT_REGION=" + c.Region,
		"_HANDLER=" + filepath.Base(c.BinaryPath),
		"LAMBDA_TASK_ROOT=" + filepath.Dir(c.BinaryPath),
		"LAMBDA_RUNTIME_DIR=" + filepath.Dir(c.BinaryPath),
		"TZ=:UTC",
	}
	env = append(env, c.Env...)
	return append(env, "AWS_LAMBDA_RUNTIME_API="+api)
}

// waitReady waits until the process asks for an invocation, reports an init error, exits,
// or overruns the init timeout.
func (e *environment) waitReady(ctx context.Context, timeout time.Duration, closing <-chan struct{}) error {
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-e.ready:
		return nil
	case fe := <-e.initErr:
		return fe
	case <-e.exited:
		return &FunctionError{Type: "Runtime.ExitError", Message: fmt.Sprintf("Runtime exited during init: %v", e.exitErr), cause: ErrExited}
	case <-t.C:
		return &FunctionError{Type: "Sandbox.Timedout", Message: fmt.Sprintf("Init did not finish within %v", timeout), cause: ErrTimeout}
	case <-closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *environment) dead() bool {
	select {
	case <-e.exited:
		return true
	case <-e.closing:
		return true
	default:
		return false
	}
}

// exitError is the error of an invocation whose process ended without answering.
func (e *environment) exitError(requestID string) error {
	status := "exit status unknown"
	if e.exitErr != nil {
		status = e.exitErr.Error()
	}
	return &FunctionError{
		Type:    "Runtime.ExitError",
		Message: fmt.Sprintf("RequestId: %s Error: Runtime exited with error: %s", requestID, status),
		cause:   ErrExited,
	}
}

// shutdown ends the process: SIGTERM first when grace > 0, SIGKILL after grace. It returns
// once the process and the server are gone.
func (e *environment) shutdown(grace time.Duration) {
	e.closeOnce.Do(func() { close(e.closing) })
	if e.cmd != nil {
		if grace > 0 && e.cmd.Process.Signal(syscall.SIGTERM) == nil {
			select {
			case <-e.exited:
			case <-time.After(grace):
			}
		}
		if err := e.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			e.f.log.Warn("runtimeapi: killing the function process", "error", err)
		}
		<-e.exited
	}
	e.closeServer()
	<-e.served
}

// closeServer stops accepting API calls and cuts open ones (a pending /next).
func (e *environment) closeServer() {
	e.closeOnce.Do(func() { close(e.closing) })
	_ = e.srv.Close()
}
