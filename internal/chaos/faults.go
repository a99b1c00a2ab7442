// Package chaos is Denorm's reliability harness: a seeded workload over the social example
// with TTL expiries and poison records (gen.go) and the application's own writes to counter
// targets and links (app.go, sparse.go, written through appwriter.go), an in-memory model
// of what the application wrote and an oracle that computes every counter, sum, copy and
// mirror from it (model.go, oracle.go), fault injectors for the DynamoDB client and the
// function invocation (api.go, invoker.go, hooks.go), and Run, which puts them around the
// real handler, executor and event source mapping emulator on DynamoDB Local and checks the
// table once the stream drains (run.go, check.go).
package chaos

import (
	"math/rand/v2"
	"sync"
)

// Faults says which faults are injected and how often. Rates are per call (client faults)
// or per invocation (function faults), between 0 and 1.
type Faults struct {
	// DeliverTwice invokes the function twice with every batch (esm Hooks.DeliverTwice).
	DeliverTwice bool
	// Throttle fails a DynamoDB call with ProvisionedThroughputExceededException before it
	// reaches the table.
	Throttle float64
	// Conflict fails a TransactWriteItems with TransactionCanceledException
	// (TransactionConflict), which DynamoDB Local never raises.
	Conflict float64
	// Crash makes an invocation die after a random number (0..6) of its writes: later writes
	// fail and the invocation ends with a function error, as when the runtime is killed.
	Crash float64
	// LostWrite is the share of crashes whose fatal write reached the table although the
	// caller saw an error (the response was lost).
	LostWrite float64
	// Timeout gives an invocation a deadline of 10..300 ms beyond the executor's deadline
	// margin; an invocation that overruns it is a function error ("Task timed out").
	Timeout float64
	// LostResponse turns a successful invocation into a function error, as if Lambda never
	// saw the response: the batch is retried, and bisected, although it was applied.
	LostResponse float64
	// Poison adds records that can never be applied to every round of the workload: an
	// unknown attribute type, a record without a sequence number, a truncated record, and a
	// sum value that is a string (written and later deleted by the application).
	Poison bool
	// TTL expires items: the item's ttl is set in the past, the item deleted, and its REMOVE
	// record rewritten to carry DynamoDB's TTL service identity.
	TTL bool
	// Application adds writes real applications make to counter targets and their links
	// (app.go): whole-item re-Puts that drop or falsify counters and Denorm's attributes,
	// counters SET or REMOVEd, targets deleted and put again at once, targets created after
	// their sources, posts whose userId is removed, never set, or set back (and, with
	// Options.SparseComments, comments whose author keys are).
	Application bool
	// Replay re-creates the event source mapping at TRIM_HORIZON halfway through the
	// workload, while the application goes on writing: every record written so far is
	// delivered again, as after a redeploy that replaced the mapping.
	Replay bool
	// MaxPerBatch caps the injected invocation failures (crash, timeout, lost response) per
	// batch, so injected faults alone never exhaust a retry budget larger than the cap: a
	// record that reaches the on-failure destination is then a poison record, never an
	// innocent one worn out by the harness. Default 3.
	MaxPerBatch int
}

// Everything is every fault on, at rates that keep most invocations clean, except the
// application class, which callers add (TestApplicationUnderRedelivery and `make soak` in
// tests/reliability do): it changes the workload, not only the delivery.
func Everything() Faults {
	return Faults{
		DeliverTwice: true, Throttle: 0.03, Conflict: 0.05, Crash: 0.05, LostWrite: 0.5,
		Timeout: 0.04, LostResponse: 0.04, Poison: true, TTL: true, Replay: true,
	}
}

// Counts are the faults injected so far.
type Counts struct {
	Throttles, Conflicts, Crashes, LostWrites, Timeouts, TimedOut, LostResponses int64
	// Poisoned is the number of records the hooks turned into (or found to be) poison.
	Poisoned int64
	// TTLRecords is the number of REMOVE records given the TTL identity.
	TTLRecords int64
	// Application counts the application-class writes of the workload, by case.
	Application AppWrites
	// StaleDenorm is the number of re-Puts that carried Denorm's own attributes (_dn...)
	// as the application had read them earlier.
	StaleDenorm int64
}

// dice is a seeded random source shared by goroutines.
type dice struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newDice(seed uint64, stream uint64) *dice {
	return &dice{rng: rand.New(rand.NewPCG(seed, stream))}
}

// hit reports true with probability p.
func (d *dice) hit(p float64) bool {
	if p <= 0 {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.Float64() < p
}

func (d *dice) intN(n int) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rng.IntN(n)
}

// budget caps injected failures per batch, keyed by the batch's last eventID: retries of a
// batch, its partial redeliveries and the second half of a bisection all end with the same
// record, so they share the cap.
type budget struct {
	mu    sync.Mutex
	max   int
	spent map[string]int
}

func newBudget(max int) *budget {
	if max <= 0 {
		max = 3
	}
	return &budget{max: max, spent: map[string]int{}}
}

// take spends one injection on key, reporting false when the cap is reached or there is
// no key (a batch the harness cannot read).
func (b *budget) take(key string) bool {
	if key == "" {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.spent[key] >= b.max {
		return false
	}
	b.spent[key]++
	return true
}
