package reliability

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/denorm/denorm/internal/chaos"
	"github.com/denorm/denorm/internal/ddbtest"
)

// Every fault at once on a short workload: the table ends exactly as the rules say (verify
// engine and oracle), the poison records and only they are in the on-failure destination.
func TestEveryFaultConverges(t *testing.T) {
	run(t, chaos.Config{Seed: envUint("DENORM_CHAOS_SEED", 1), Ops: 1000, Faults: chaos.Everything(),
		BatchSize: 50})
}

// A global table of two Regions (internal/replicator, 1 s apart), the pipeline in the
// first under every fault, the application writing each item in one of the two, the second
// Region cut off for a third of the writes and coming back. Both tables
// end equal, with zero drift in each: each count and sum counted once, not once per Region,
// whatever Region wrote its sources. Denorm writes into application items in the first
// Region, so an application write of the same item in the second, within the delay, can
// lose to it (last writer wins, as between any two writers of a global table): the oracle,
// which expects every application write to land, is checked when the application writes
// the items Denorm writes into in the first Region (home), and only reported otherwise.
func TestTwoRegions(t *testing.T) {
	f := chaos.Everything()
	f.Application = true
	for _, home := range []bool{true, false} {
		t.Run(map[bool]string{true: "home writes", false: "every item anywhere"}[home], func(t *testing.T) {
			res := run(t, chaos.Config{Seed: envUint("DENORM_CHAOS_SEED", 5), Ops: 600, Faults: f, BatchSize: 50,
				Replica: ddbtest.TableName(t) + "-r2", ReplicationDelay: time.Second, HomeWrites: home})
			if r := res.Replication; r.Replicated == 0 || r.Held == 0 {
				t.Errorf("replication: %+v: nothing replicated, or nothing held while the second Region was cut off", r)
			}
		})
	}
}

// The processing Region moves (docs/processor.md, "Moving the processing Region", its four
// steps): the first Region goes down with records unread, the processor is deployed in the
// replica's Region at TRIM_HORIZON and a backfill under the probe decides every counter;
// the first Region comes back, and a repair decides what it had not replicated. Its
// processor starts once the stream registry has reached it, and must write nothing; or at
// once, as Lambda's would, and writes until the registry arrives. Both tables end equal
// with zero drift in each. Poison records and Replay are left out: the run has three
// mappings on two streams, and the move is itself a stream read again from its start.
func TestProcessingRegionMoves(t *testing.T) {
	f := chaos.Everything()
	f.Application, f.Poison, f.Replay = true, false, false
	for _, atOnce := range []bool{false, true} {
		t.Run(map[bool]string{false: "old processor after the registry", true: "old processor at once"}[atOnce], func(t *testing.T) {
			res := run(t, chaos.Config{Seed: envUint("DENORM_CHAOS_SEED", 6), Ops: 400, Faults: f, BatchSize: 50,
				Replica: ddbtest.TableName(t) + "-r2", ReplicationDelay: time.Second, Move: true, BackAtOnce: atOnce})
			if res.Move == nil {
				t.Fatal("the run did not move the processing Region")
			}
		})
	}
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
		{"mapping re-created at TRIM_HORIZON", chaos.Faults{Replay: true}},
		{"application writes while the stream is read again", chaos.Faults{Application: true, Replay: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			run(t, chaos.Config{Seed: 10, Ops: 250, Faults: tc.f, BatchSize: 25})
		})
	}
}

// The application class together with redelivery (every batch delivered twice, crashes,
// lost responses, bisection, the stream read again from its start): the application's
// writes of counter targets land between a batch and its redelivery. DENORM_CHAOS_SEED
// picks another seed.
func TestApplicationUnderRedelivery(t *testing.T) {
	f := chaos.Everything()
	f.Application = true
	run(t, chaos.Config{Seed: envUint("DENORM_CHAOS_SEED", 3), Ops: 1000, Faults: f, BatchSize: 50})
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
