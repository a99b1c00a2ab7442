package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Emulator provides a DynamoDB Local endpoint for one run.
//
// DynamoDB Local slows down as it is used: on this machine a fresh instance took 250-530
// UpdateItem/s on a table with a stream; the same instance, after ~70,000 stream records and
// ~12,000 items in other tables, took 41/s on a new table. Runs that share an instance are
// therefore not comparable (whichever runs later is slower), so the benchmark gives every
// run, and the ceiling, a fresh instance, warmed up the same way.
type Emulator interface {
	Start(ctx context.Context) (endpoint string, stop func(), err error)
}

// Shared is one endpoint for every run (tests; or --endpoint when a fresh instance per run
// is not wanted).
type Shared string

// Start returns the endpoint.
func (s Shared) Start(context.Context) (string, func(), error) { return string(s), func() {}, nil }

// Fresh starts a new DynamoDB Local per run with scripts/dynamodb-local.sh and stops that
// process (by the id the script recorded) when the run is done.
type Fresh struct {
	Script string // scripts/dynamodb-local.sh
	Cache  string // the script's cache folder (DENORM_CACHE, default .cache)
}

// Start starts an instance and returns its URL.
func (f Fresh) Start(ctx context.Context) (string, func(), error) {
	out, err := exec.CommandContext(ctx, "bash", f.Script, "start").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", nil, fmt.Errorf("starting DynamoDB Local: %s", strings.TrimSpace(string(ee.Stderr)))
		}
		return "", nil, fmt.Errorf("starting DynamoDB Local: %w", err)
	}
	url := strings.TrimSpace(string(out))
	port := url[strings.LastIndexByte(url, ':')+1:]
	cache := f.Cache
	if cache == "" { // the script's default: .cache next to scripts/
		cache = filepath.Join(filepath.Dir(filepath.Dir(f.Script)), ".cache")
	}
	pidFile := filepath.Join(cache, "dynamodb-local", "run", port+".pid")
	return url, func() { stopPID(pidFile) }, nil
}

// stopPID ends the process whose id pidFile holds (one this benchmark started) and waits
// for it to exit, so the next instance does not compete with it.
func stopPID(pidFile string) {
	b, err := os.ReadFile(pidFile)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return
	}
	_ = p.Signal(syscall.SIGTERM)
	for i := 0; i < 100 && p.Signal(syscall.Signal(0)) == nil; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	_ = os.Remove(pidFile)
}
