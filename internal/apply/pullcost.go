package apply

import (
	"fmt"
	"sync"
)

// PullReads says when a pull reads its target before writing it.
type PullReads string

const (
	// PullReadsAuto reads first while the recent share of refused pulls is above
	// readBreakEven, where the reads cost less than the refused writes they spare.
	PullReadsAuto PullReads = "auto"
	// PullReadsAlways reads before every pull that has something to write.
	PullReadsAlways PullReads = "always"
	// PullReadsNever writes every pull and lets its condition refuse it.
	PullReadsNever PullReads = "never"
)

// ParsePullReads reads a PullReads setting ("" is auto).
func ParsePullReads(s string) (PullReads, error) {
	switch p := PullReads(s); p {
	case "":
		return PullReadsAuto, nil
	case PullReadsAuto, PullReadsAlways, PullReadsNever:
		return p, nil
	}
	return "", fmt.Errorf("pull reads %q: want auto, always or never", s)
}

// readBreakEven is the share of refused pulls above which reading each target first is
// cheaper than writing blind. A refused conditional write is billed 1 write unit; a
// consistent read of an item up to 4 KB is 1 read unit, and a read unit costs a fifth of a
// write unit (on demand, $0.125 against $0.625 per million; provisioned, $0.00013 against
// $0.00065 per unit-hour). The targets of pulls are small items (a membership, a comment).
const readBreakEven = 0.2

// pullDecay weighs the past against each new batch: the estimate follows the last few
// batches, so a processor that catches up (and stops meeting deleted targets) stops reading.
const pullDecay = 0.8

// pullMinSample is how many recent pulls the estimate needs before it may choose to read.
const pullMinSample = 10

// pullCost keeps a decayed count of the pulls that had something to write and of those
// their condition refused (or a read showed it would). Both modes observe the same
// quantity, so the choice can go back and forth as the workload does.
type pullCost struct {
	mu      sync.Mutex
	pulls   float64
	refused float64
}

func (c *pullCost) observe(s Stats) {
	refused := s.PullsRefused + s.PullsSkipped
	pulls := s.Pulls + refused
	if pulls == 0 {
		return
	}
	c.mu.Lock()
	c.pulls = c.pulls*pullDecay + float64(pulls)
	c.refused = c.refused*pullDecay + float64(refused)
	c.mu.Unlock()
}

// readFirst reports whether reading each pull's target first is expected to cost less.
func (c *pullCost) readFirst() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pulls >= pullMinSample && c.refused > readBreakEven*c.pulls
}

func (x *Executor) readPullTargets() bool {
	switch x.opt.PullReads {
	case PullReadsAlways:
		return true
	case PullReadsNever:
		return false
	}
	return x.pulls.readFirst()
}
