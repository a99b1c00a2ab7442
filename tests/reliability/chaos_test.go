package reliability

import (
	"testing"

	"github.com/denorm/denorm/internal/chaos"
)

// Every fault at once on a short workload: the table ends exactly as the rules say, the
// poison records and only they are in the on-failure destination.
func TestEveryFaultConverges(t *testing.T) {
	run(t, chaos.Config{Seed: 1, Ops: 1500, Faults: chaos.Everything(), BisectItemFailures: true, BatchSize: 50})
}

// No faults: the baseline the fault runs are compared with.
func TestNoFaultConverges(t *testing.T) {
	run(t, chaos.Config{Seed: 2, Ops: 800})
}
