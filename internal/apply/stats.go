package apply

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// Stats counts what one Apply did. WCU is the write capacity DynamoDB reported consumed.
type Stats struct {
	Requests      int     // write requests sent (UpdateItem, PutItem, DeleteItem, TransactWriteItems)
	Transactions  int     // TransactWriteItems among them
	Reads         int     // GetItem and Query requests
	WCU           float64 // consumed write capacity units
	RCU           float64 // consumed read capacity units
	Duplicates    int     // deltas skipped because their event or sequence was already applied
	Stale         int     // copy/mirror writes skipped by the version guard
	Unchanged     int     // writes skipped because the target already held the values
	MissingTarget int     // copies of a count or sum not written: the target does not exist (it gets its copy when inserted)
	Retries       int     // transient errors retried
	Conflicts     int     // of the retries: transactions cancelled by a TransactionConflict (a hot item)
	Failures      int     // groups that failed
	FanOutPages   int     // fan-out query pages processed
	FanOutTargets int     // fan-out targets written
	JobsStarted   int     // fan-outs handed to a job item
	JobsDone      int     // job items finished
	Pulls         int     // targets filled from their source
	PullsRefused  int     // pulls written and refused by their condition (also in Refused, by guard)
	PullsSkipped  int     // pulls not written: a read of the target showed the write would be refused
	Relayed       int     // relay writes: one source's deltas to a target in another partition
	Copies        int     // copies of a count or sum target's state written onto it
	Refreshes     int     // count or sum targets the application wrote, whose state was read to put their copy back
	// Max and min: raises written (refused ones are in Refused[GuardExtreme]), values that
	// left a target and were found not to be its extreme by one read, and recomputes (one
	// query of the target's sources each, of one or more pages).
	ExtremeRaises     int
	ExtremesKept      int
	ExtremeRecomputes int
	// Refused counts the writes refused by their condition, per guard: DynamoDB bills each
	// refused single-item write 1 WCU, so these are the writes worth avoiding.
	Refused [NumGuards]int
}

// Guard names the condition a write carries, for counting the writes it refused.
type Guard int

const (
	// GuardWatermark: a counter update's watermark (a redelivered record, a missing or
	// unstamped target, a target the application replaced since).
	GuardWatermark Guard = iota
	// GuardMarker: a counter transaction's event markers and target checks.
	GuardMarker
	// GuardVersion: a copy, mirror or delete's version (a newer version landed, or the
	// copy target does not exist) and a fan-out target's link.
	GuardVersion
	// GuardPull: a pull's condition that the item still holds what the record saw.
	GuardPull
	// GuardRegistry: a fan-out's version registration (a newer one is registered).
	GuardRegistry
	// GuardJob: a fan-out job item's version and step.
	GuardJob
	// GuardCopy: the copy of a count or sum target's state (a newer copy landed, or the
	// target does not exist).
	GuardCopy
	// GuardRelay: a relay write's source sequence number (a redelivered record).
	GuardRelay
	// GuardExtreme: a max or min raise (the stored value is as good, or the target does not
	// exist) or a recompute's write (the target changed since it was read).
	GuardExtreme
	// GuardNone: an unconditional write.
	GuardNone
	// NumGuards is the number of guards.
	NumGuards
)

var guardNames = [NumGuards]string{"watermark", "marker", "version", "pull", "registry", "job", "copy", "relay", "extreme", "none"}

func (g Guard) String() string { return guardNames[g] }

// RefusedTotal is the number of writes refused by any guard.
func (s *Stats) RefusedTotal() int {
	n := 0
	for _, c := range s.Refused {
		n += c
	}
	return n
}

// Add adds o to s.
func (s *Stats) Add(o Stats) {
	s.Requests += o.Requests
	s.Transactions += o.Transactions
	s.Reads += o.Reads
	s.WCU += o.WCU
	s.RCU += o.RCU
	s.Duplicates += o.Duplicates
	s.Stale += o.Stale
	s.Unchanged += o.Unchanged
	s.MissingTarget += o.MissingTarget
	s.Retries += o.Retries
	s.Conflicts += o.Conflicts
	s.Failures += o.Failures
	s.FanOutPages += o.FanOutPages
	s.FanOutTargets += o.FanOutTargets
	s.JobsStarted += o.JobsStarted
	s.JobsDone += o.JobsDone
	s.Pulls += o.Pulls
	s.PullsRefused += o.PullsRefused
	s.PullsSkipped += o.PullsSkipped
	s.Relayed += o.Relayed
	s.Copies += o.Copies
	s.Refreshes += o.Refreshes
	s.ExtremeRaises += o.ExtremeRaises
	s.ExtremesKept += o.ExtremesKept
	s.ExtremeRecomputes += o.ExtremeRecomputes
	for g, n := range o.Refused {
		s.Refused[g] += n
	}
}

func (r *run) consumed(write bool, ccs ...*types.ConsumedCapacity) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if write {
		r.stats.Requests++
	} else {
		r.stats.Reads++
	}
	for _, cc := range ccs {
		if cc == nil || cc.CapacityUnits == nil {
			continue
		}
		if write {
			r.stats.WCU += *cc.CapacityUnits
		} else {
			r.stats.RCU += *cc.CapacityUnits
		}
	}
}

func (r *run) count(f func(s *Stats)) {
	r.mu.Lock()
	f(&r.stats)
	r.mu.Unlock()
}
