package reliability

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/chaos"
)

// Every fault at once on a short workload: the table ends exactly as the rules say (verify
// engine and oracle), the poison records and only they are in the on-failure destination.
func TestEveryFaultConverges(t *testing.T) {
	run(t, chaos.Config{Seed: envUint("DENORM_CHAOS_SEED", 1), Ops: 1500, Faults: chaos.Everything(),
		BatchSize: 50})
}

// Each fault alone, so a failure names its fault; "none" is the baseline.
func TestEachFaultAlone(t *testing.T) {
	all := chaos.Everything()
	for _, tc := range []struct {
		name string
		f    chaos.Faults
	}{
		{"none", chaos.Faults{}},
		{"delivered twice", chaos.Faults{DeliverTwice: true}},
		{"crash after k writes", chaos.Faults{Crash: 0.3, LostWrite: 0.5}},
		{"short deadlines", chaos.Faults{Timeout: 0.3}},
		{"lost responses and bisection", chaos.Faults{LostResponse: 0.3}},
		{"throttling and conflicts", chaos.Faults{Throttle: 0.15, Conflict: 0.3}},
		{"poison and TTL", chaos.Faults{Poison: all.Poison, TTL: all.TTL}},
		{"application writes", chaos.Faults{Application: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run(t, chaos.Config{Seed: 10, Ops: 350, Faults: tc.f, BatchSize: 25})
		})
	}
}

// Open in issue 14: the application class together with redelivery (every batch delivered
// twice, crashes, lost responses, bisection). The restores read on in the stream for the
// records of Denorm's writes after the application's, and a delete and re-put make one
// replacement. At e3982b8 (2026-11-25) seeds 1 to 8 passed with zero drift alone, and seed
// 3 three times more with three runs at once; but seed 3 drifted by one in `bash .ci/run` at
// 8fcaf39, on an emulator that had run the other packages first: USER#u0005 commentCount
// 28, want 27, a user re-put with its counters at 0 and later deleted and put back. Its
// summary's "restores" line now says whether a restore was ambiguous (the documented limit).
//
// Skipped unless DENORM_KNOWN_BUGS=1.
func TestApplicationUnderRedelivery(t *testing.T) {
	if os.Getenv("DENORM_KNOWN_BUGS") != "1" {
		t.Skip("known bug (issue 14): set DENORM_KNOWN_BUGS=1 to reproduce")
	}
	f := chaos.Everything()
	f.Application = true
	run(t, chaos.Config{Seed: envUint("DENORM_CHAOS_SEED", 3), Ops: 1500, Faults: f, BatchSize: 50})
}

// TestSoak is `make soak`: DENORM_SOAK_OPS operations (skipped when unset) with every
// fault on, the application class included (DENORM_SOAK_APPLICATION=0 leaves it out), seed
// DENORM_SOAK_SEED (default 1).
func TestSoak(t *testing.T) {
	n := int(envUint("DENORM_SOAK_OPS", 0))
	if n == 0 {
		t.Skip("soak: set DENORM_SOAK_OPS (make soak SOAK_OPS=100000)")
	}
	f := chaos.Everything()
	f.Application = os.Getenv("DENORM_SOAK_APPLICATION") != "0"
	cfg := chaos.Config{Seed: envUint("DENORM_SOAK_SEED", 1), Ops: n, Faults: f,
		Progress: os.Stderr, ProgressEvery: time.Minute, DrainTimeout: 2 * time.Hour}
	res := run(t, cfg)
	if dir := os.Getenv("DENORM_SOAK_REPORT"); dir != "" && res != nil {
		f, err := os.Create(dir)
		if err == nil {
			res.WriteSummary(f)
			_ = f.Close()
		}
	}
}

func envUint(name string, def uint64) uint64 {
	if v, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}
