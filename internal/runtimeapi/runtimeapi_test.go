package runtimeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/esm"
)

// The runtime is an event source mapping's function.
var _ esm.Invoker = (*Function)(nil)

// echofn is the test function's binary, built once per test run.
var echofn string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runtimeapi-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echofn = filepath.Join(dir, "bootstrap")
	// As for Lambda (provided.al2023), without the RPC mode, but for this machine.
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", echofn, "./testdata/echofn")
	cmd.Env = append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building testdata/echofn: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects the function's output from its two pipes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startEcho(t *testing.T, cfg Config) *Function {
	t.Helper()
	cfg.BinaryPath = echofn
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	f, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func invoke(t *testing.T, f *Function, payload string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return f.Invoke(ctx, []byte(payload))
}

// seen is what echofn reports about its invocation.
type seen struct {
	RequestID    string `json:"requestId"`
	FunctionARN  string `json:"functionArn"`
	DeadlineMs   int64  `json:"deadlineMs"`
	HasDeadline  bool   `json:"hasDeadline"`
	FunctionName string `json:"functionName"`
	MemoryMB     int    `json:"memoryMB"`
	Region       string `json:"region"`
	Pid          int    `json:"pid"`
}

func invocationContext(t *testing.T, f *Function) seen {
	t.Helper()
	out, err := invoke(t, f, `{"context":true}`)
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	if err := json.Unmarshal(out, &s); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	return s
}

func TestRoundTrip(t *testing.T) {
	out := &syncBuffer{}
	f := startEcho(t, Config{Output: out})
	pid := invocationContext(t, f).Pid
	for _, payload := range []string{`{"a":1,"b":[true,null,"x"]}`, `"text"`, `null`} {
		got, err := invoke(t, f, `{"echo":`+payload+`}`)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != payload {
			t.Errorf("echo %s returned %s", payload, got)
		}
	}
	if again := invocationContext(t, f).Pid; again != pid {
		t.Errorf("process %d replaced by %d between successful invocations", pid, again)
	}
	if _, err := f.Invoke(context.Background(), make([]byte, MaxPayload+1)); !errors.Is(err, ErrPayloadTooLarge) {
		t.Errorf("oversized payload: %v, want ErrPayloadTooLarge", err)
	}
	f.Close() // output is copied from pipes: complete once the process is gone
	if n := strings.Count(out.String(), "echofn: invoked"); n != 5 {
		t.Errorf("function output has %d invocation lines, want 5:\n%s", n, out)
	}
}

// A returned error is the function's error; the process lives on.
func TestFunctionError(t *testing.T) {
	f := startEcho(t, Config{})
	pid := invocationContext(t, f).Pid
	_, err := invoke(t, f, `{"error":"boom"}`)
	var fe *FunctionError
	if !errors.As(err, &fe) || fe.Message != "requested failure: boom" || fe.Type != "wrapError" {
		t.Fatalf("error %#v, want the function's wrapError", err)
	}
	if errors.Is(err, ErrExited) || errors.Is(err, ErrTimeout) {
		t.Errorf("a function error is not a runtime failure: %v", err)
	}
	if again := invocationContext(t, f).Pid; again != pid {
		t.Errorf("process restarted after a handled error (%d -> %d)", pid, again)
	}
}

// A panic is reported as an error with its stack; aws-lambda-go then exits, and the next
// invocation gets a new process.
func TestPanicRestarts(t *testing.T) {
	f := startEcho(t, Config{})
	pid := invocationContext(t, f).Pid
	_, err := invoke(t, f, `{"panic":"kaboom"}`)
	var fe *FunctionError
	if !errors.As(err, &fe) || fe.Message != "kaboom" || len(fe.StackTrace) == 0 {
		t.Fatalf("error %#v, want the panic with its stack", err)
	}
	if again := invocationContext(t, f).Pid; again == pid {
		t.Errorf("process %d kept after a panic", pid)
	}
}

// An invocation that outlives Timeout fails, the process is killed and replaced.
func TestTimeoutRestarts(t *testing.T) {
	f := startEcho(t, Config{Timeout: 300 * time.Millisecond})
	pid := invocationContext(t, f).Pid
	began := time.Now()
	_, err := invoke(t, f, `{"sleep":"10s"}`)
	var fe *FunctionError
	if !errors.Is(err, ErrTimeout) || !errors.As(err, &fe) || fe.Type != "Sandbox.Timedout" {
		t.Fatalf("error %v, want a timeout", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("timeout took %v, want about 300ms", d)
	}
	if again := invocationContext(t, f).Pid; again == pid {
		t.Errorf("process %d kept after a timeout", pid)
	}
}

// A process that dies mid-invocation fails it; the next one gets a new process.
func TestCrashRestarts(t *testing.T) {
	f := startEcho(t, Config{})
	_, err := invoke(t, f, `{"exit":2}`)
	var fe *FunctionError
	if !errors.Is(err, ErrExited) || !errors.As(err, &fe) || fe.Type != "Runtime.ExitError" || !strings.Contains(fe.Message, "exit status 2") {
		t.Fatalf("error %v, want Runtime.ExitError with exit status 2", err)
	}
	if got, err := invoke(t, f, `{"echo":1}`); err != nil || string(got) != "1" {
		t.Errorf("after a crash: %s, %v", got, err)
	}
}

// The function's context carries the deadline, request id and ARN from the headers, and
// the environment Lambda sets.
func TestInvocationContext(t *testing.T) {
	f := startEcho(t, Config{Timeout: 3 * time.Second, MemoryMB: 256, FunctionName: "streamproc", Region: "eu-west-1"})
	before := time.Now()
	s := invocationContext(t, f)
	after := time.Now()
	deadline := time.UnixMilli(s.DeadlineMs)
	if !s.HasDeadline || deadline.Before(before.Add(3*time.Second-time.Millisecond)) || deadline.After(after.Add(3*time.Second)) {
		t.Errorf("deadline %v (set: %v), want 3s after the call (%v..%v)", deadline, s.HasDeadline, before, after)
	}
	if !regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(s.RequestID) {
		t.Errorf("request id %q is not a UUID", s.RequestID)
	}
	if s.FunctionARN != "arn:aws:lambda:eu-west-1:000000000000:function:streamproc" || s.FunctionARN != f.FunctionARN() {
		t.Errorf("invoked ARN %q", s.FunctionARN)
	}
	if s.FunctionName != "streamproc" || s.MemoryMB != 256 || s.Region != "eu-west-1" {
		t.Errorf("environment %+v", s)
	}
	if other := invocationContext(t, f); other.RequestID == s.RequestID {
		t.Error("two invocations share a request id")
	}
}

func TestStartFailsWhenInitFails(t *testing.T) {
	out := &syncBuffer{}
	_, err := Start(context.Background(), Config{BinaryPath: echofn, Env: []string{"ECHOFN_FAIL_INIT=1"}, Output: out})
	if !errors.Is(err, ErrExited) || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Start: %v, want the process's exit during init", err)
	}
	if !strings.Contains(out.String(), "echofn: init failed") {
		t.Errorf("init output not forwarded: %q", out)
	}
	if _, err := Start(context.Background(), Config{BinaryPath: filepath.Join(t.TempDir(), "missing")}); err == nil {
		t.Error("Start with a missing binary succeeded")
	}
}

// Cancelling Start's context stops the process and every goroutine; the Function then
// refuses invocations.
func TestContextStopsFunction(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	f, err := Start(ctx, Config{BinaryPath: echofn, Output: &syncBuffer{}})
	if err != nil {
		t.Fatal(err)
	}
	pid := invocationContext(t, f).Pid
	cancel()
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := invoke(t, f, `{"echo":1}`)
		if errors.Is(err, ErrClosed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Invoke after cancel: %v, want ErrClosed", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.Close() // waits for the process; a second Close is harmless
	if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
		t.Errorf("process %d still running", pid)
	}
	for time.Now().Before(deadline) && runtime.NumGoroutine() > goroutines {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after Close, %d before Start", n, goroutines)
	}
}

// Without Output, every line the process prints is logged, with its stream.
func TestOutputLogged(t *testing.T) {
	logs := &syncBuffer{}
	f := startEcho(t, Config{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if _, err := invoke(t, f, `{"echo":1}`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !strings.Contains(logs.String(), `msg="echofn: invoked" source=function stream=stdout`) {
		t.Errorf("function output not logged:\n%s", logs)
	}
}

func TestLineWriter(t *testing.T) {
	logs := &syncBuffer{}
	w := &lineWriter{log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey {
				return slog.Attr{}
			}
			return a
		},
	})), stream: "stderr"}
	for _, chunk := range []string{"one\ntw", "o\r\n", "three"} {
		if _, err := w.Write([]byte(chunk)); err != nil {
			t.Fatal(err)
		}
	}
	w.flush()
	want := "msg=one source=function stream=stderr\nmsg=two source=function stream=stderr\nmsg=three source=function stream=stderr\n"
	if logs.String() != want {
		t.Errorf("logged\n%s\nwant\n%s", logs, want)
	}
}
