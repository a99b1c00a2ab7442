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
// twice, crashes, lost responses, bisection). On 2026-11-25 at 43db0f9 seeds 1 to 8 ran
// once each beside a soak: seeds 6 and 7 drifted (POST#p0006 commentCount 10, want 8;
// FOLDER#f0000 fileCount 7, want 6), and looping them with DENORM_CHAOS_TRACE found two
// holes, closed in 85a5965 (an item written back from an earlier incarnation taken for one
// of Denorm's writes) and 6c4fd3a (a fold adding again what Denorm had applied to the re-put
// target). At 6c4fd3a seeds 1 to 8 passed with zero drift and seed 7 again, but seed 6
// drifted in 2 of its 12 runs: GROUP#g0002 memberCount -20, want 3 (deleted and re-put twice) and
// POST#p0012 commentCount 1, want 9 (deleted and re-put as read before, _dn_* included; the
// same target drifted the same way at 85a5965). Not traced yet: DENORM_CHAOS_SEED=6
// DENORM_CHAOS_TRACE='POST#p0012,GROUP#*', a few runs, drifts about one run in five.
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
